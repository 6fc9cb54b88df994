import pytest
from pydantic import BaseModel, Field

from tools import (
    ExecutionDomain,
    ReadTool,
    ToolError,
    ToolOutput,
    ToolRegistry,
    UnknownTool,
    default_registry,
    validate_input,
)


class EchoInput(BaseModel):
    text: str = Field(description="Text to echo.")


class EchoTool:
    name = "Echo"
    description = "Echo the text back."
    input_model = EchoInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    async def run(self, args, ctx):
        return ToolOutput(content=args.text)


def test_default_registry_holds_the_six_workspace_tools():
    assert default_registry().names() == ["Read", "Write", "Edit", "Bash", "Grep", "Glob"]


def test_duplicate_name_is_refused():
    registry = ToolRegistry([ReadTool()])
    with pytest.raises(ValueError, match="'Read' is already registered"):
        registry.register(ReadTool())


def test_missing_attribute_is_refused_naming_tool_and_attribute():
    tool = EchoTool()
    tool.description = None  # instance attribute shadows the class one
    with pytest.raises(ValueError, match="'Echo'.*'description'"):
        ToolRegistry().register(tool)


def test_non_bool_read_only_flag_is_refused():
    tool = EchoTool()
    tool.is_read_only = "yes"
    with pytest.raises(ValueError, match="'is_read_only' must be a bool"):
        ToolRegistry().register(tool)


def test_object_without_metadata_is_refused():
    class Bare:
        async def run(self, args, ctx): ...

    with pytest.raises(ValueError, match="'Bare'.*'name' is missing"):
        ToolRegistry().register(Bare())


def test_unknown_name_lists_available_tools():
    registry = ToolRegistry([ReadTool(), EchoTool()])
    with pytest.raises(UnknownTool, match="'Nope'.*Available tools: Echo, Read") as info:
        registry.get("Nope")
    assert isinstance(info.value, ToolError)


def test_container_protocol():
    registry = ToolRegistry([ReadTool(), EchoTool()])
    assert len(registry) == 2
    assert "Echo" in registry and "Nope" not in registry
    assert [t.name for t in registry] == ["Read", "Echo"]
    assert registry.get("Echo").name == "Echo"


def test_filtered_returns_a_new_registry():
    registry = default_registry()
    read_only = registry.filtered(lambda t: t.is_read_only)
    assert read_only.names() == ["Read", "Grep", "Glob"]
    read_only.register(EchoTool())
    assert "Echo" not in registry


def test_schemas_have_name_description_and_json_schema():
    (schema,) = ToolRegistry([EchoTool()]).schemas()
    assert schema["name"] == "Echo"
    assert schema["description"] == "Echo the text back."
    assert schema["input_schema"]["type"] == "object"
    assert schema["input_schema"]["properties"]["text"]["description"] == "Text to echo."
    assert schema["input_schema"]["required"] == ["text"]


def test_every_default_tool_field_has_a_description():
    for schema in default_registry().schemas():
        for field, spec in schema["input_schema"]["properties"].items():
            assert spec.get("description"), f"{schema['name']}.{field}"


def test_validate_input_returns_the_model():
    args = validate_input(ReadTool(), {"path": "a.txt", "offset": 2})
    assert args.path == "a.txt" and args.offset == 2


def test_validate_input_names_each_bad_field():
    with pytest.raises(ToolError) as info:
        validate_input(ReadTool(), {"offset": 0, "bogus": 1})
    message = str(info.value)
    assert message.startswith("Invalid input for Read:")
    assert "- path: Field required" in message
    assert "- offset: Input should be greater than or equal to 1" in message
    assert "- bogus: Extra inputs are not permitted" in message
