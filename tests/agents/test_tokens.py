import pytest

from agents.messages import Message, TextBlock, ToolUseBlock
from agents.ports import ToolSchema
from agents.tokens import CharRatioEstimator, estimate_request_tokens


def test_text_estimate_is_chars_over_four_rounded_up():
    assert CharRatioEstimator().count_text("a" * 401) == 101


def test_message_estimate_is_cached_on_the_message():
    counter = CharRatioEstimator()
    message = Message.user("hello " * 100)
    first = counter.count_message(message)
    assert message._token_cache[counter.key] == first
    assert counter.count_message(message) == first


def test_different_estimators_do_not_share_cache_entries():
    message = Message.user("hello " * 100)
    a, b = CharRatioEstimator(4.0), CharRatioEstimator(2.0)
    assert b.count_message(message) > a.count_message(message)


def test_tool_use_input_is_counted_as_json():
    counter = CharRatioEstimator()
    small = Message.assistant(ToolUseBlock(id="1", name="Bash", input={"command": "ls"}))
    big = Message.assistant(ToolUseBlock(id="1", name="Bash", input={"command": "ls " * 300}))
    assert counter.count_message(big) > counter.count_message(small) + 200


def test_request_estimate_includes_system_prompt_and_tool_schemas():
    counter = CharRatioEstimator()
    messages = [Message.user("hi"), Message.assistant(TextBlock(text="hello"))]
    bare = estimate_request_tokens(counter, system="", tools=[], messages=messages)
    schema = ToolSchema(name="Read", description="Read a file " * 20, input_schema={"type": "object"})
    full = estimate_request_tokens(counter, system="x" * 4000, tools=[schema], messages=messages)
    assert full >= bare + 1000 + counter.count_json(schema.model_dump())


def test_a_tool_schemas_cached_count_follows_the_counter_and_its_calibration():
    from agents.tokens import CalibratedCounter, estimate_prefix_tokens

    schema = ToolSchema(name="Read", description="Read a file " * 20, input_schema={"type": "object"})
    counter = CalibratedCounter()
    first = estimate_prefix_tokens(counter, system="", tools=[schema])
    assert estimate_prefix_tokens(counter, system="", tools=[schema]) == first
    counter.observe(first, first * 2)
    assert estimate_prefix_tokens(counter, system="", tools=[schema]) == 8 + counter.count_json(schema.model_dump())
    assert estimate_prefix_tokens(CharRatioEstimator(4.0, 1.6), system="", tools=[schema]) > first


def test_sessions_share_one_schema_per_tool_and_a_changed_description_makes_a_new_one():
    from agents.working_set import tool_schemas
    from tools import ToolRegistry
    from tools.files._read import ReadTool

    class Described(ReadTool):
        description = "another description"

    (a,), (b,) = tool_schemas(ToolRegistry([ReadTool()])), tool_schemas(ToolRegistry([ReadTool()]))
    (other,) = tool_schemas(ToolRegistry([Described()]))
    assert a is b
    assert other.description == "another description" and other.input_schema == a.input_schema


def test_incremental_estimate_matches_a_full_recount_after_growth_and_rewrite():
    from agents.tokens import IncrementalEstimate, estimate_messages_tokens

    counter = CharRatioEstimator()
    running = IncrementalEstimate(counter)
    messages = [Message.user(f"message {i} " * (i + 1)) for i in range(20)]
    assert running.total(messages[:10]) == estimate_messages_tokens(counter, messages[:10])
    assert running.total(messages) == estimate_messages_tokens(counter, messages)
    rewritten = messages[:5] + [Message.user("short")] + messages[6:]
    assert running.total(rewritten) == estimate_messages_tokens(counter, rewritten)


def test_incremental_estimate_of_a_new_tuple_each_call_matches_a_full_recount():
    from agents.tokens import IncrementalEstimate, estimate_messages_tokens

    counter = CharRatioEstimator()
    running = IncrementalEstimate(counter)
    messages = [Message.user(f"message {i} " * (i + 1)) for i in range(20)]
    for size in (5, 12, 20):  # a request's messages: the conversation as a new tuple each call
        assert running.total(tuple(messages[:size])) == estimate_messages_tokens(counter, messages[:size])
    rewritten = (*messages[:7], Message.user("short"), *messages[8:])
    assert running.total(rewritten) == estimate_messages_tokens(counter, rewritten)


def test_incremental_estimate_recounts_everything_at_a_calibrated_counters_new_scale():
    from agents.tokens import CalibratedCounter, IncrementalEstimate, estimate_messages_tokens

    counter = CalibratedCounter()
    running = IncrementalEstimate(counter)
    messages = [Message.user(f"message {i} " * (i + 1)) for i in range(20)]
    running.total(messages[:10])
    counter.observe(1_000, 1_500)
    assert running.total(messages) == estimate_messages_tokens(counter, messages)  # not half at the old scale


def test_the_compilers_prefix_count_follows_a_calibrated_counters_new_scale():
    from agents.tokens import CalibratedCounter, estimate_prefix_tokens
    from agents.working_set import WorkingSetCompiler

    counter = CalibratedCounter()
    compiler = WorkingSetCompiler(counter)
    system = "You are a careful engineer. " * 40
    compiler.prefix_tokens(system, ())
    counter.observe(1_000, 2_000)
    assert compiler.prefix_tokens(system, ()) == estimate_prefix_tokens(counter, system=system, tools=())


# -- calibration against the provider's counts ------------------------------------


def test_a_calibrated_counter_starts_as_its_base():
    from agents.tokens import CalibratedCounter

    message = Message.user("x" * 400)
    assert CalibratedCounter().count_message(message) == CharRatioEstimator().count_message(message)


def test_calibration_scales_estimates_to_what_the_provider_counted():
    from agents.tokens import CalibratedCounter

    counter = CalibratedCounter()
    message = Message.user("y" * 4_000)
    estimated = counter.count_message(message)
    counter.observe(estimated, int(estimated * 1.5))
    assert counter.scale == 1.5
    assert counter.count_message(message) == pytest.approx(estimated * 1.5, rel=0.01)
    counter.observe(counter.count_message(message), int(estimated * 1.5))
    assert counter.scale == 1.5  # a confirmed scale stays


def test_calibration_never_counts_below_the_latest_measured_ratio():
    from agents.tokens import CalibratedCounter

    counter = CalibratedCounter()
    counter.observe(1_000, 1_420)
    assert counter.scale == 1.45  # rounded up to the 5% step, never down to 1.4
    counter.observe(1_450, 2_000)  # unscaled 1000 → 2.0: the scale rises to it at once, not halfway
    assert counter.scale == 2.0


def test_a_scaled_counter_counts_a_message_it_has_never_seen():
    from agents.tokens import CalibratedCounter

    counter = CalibratedCounter()
    counter.observe(1_000, 2_000)
    fresh = Message.user("z" * 4_000)  # no estimate cached on it yet
    assert counter.count_message(fresh) == pytest.approx(CharRatioEstimator().count_message(fresh) * 2.0, rel=0.01)


def test_calibration_moves_halfway_in_steps_and_stays_in_bounds():
    from agents.tokens import CalibratedCounter

    counter = CalibratedCounter()
    counter.observe(1_000, 2_000)
    counter.observe(2_000, 1_000)  # unscaled 1000 → target 1.0, halfway from 2.0
    assert counter.scale == 1.5
    counter.observe(100, 100_000)
    assert counter.scale <= CalibratedCounter.HIGHEST
    counter.observe(0, 10)
    counter.observe(10, 0)  # nothing reported: nothing learned
    assert counter.observations == 3


def test_thinking_signed_counts_unsigned_does_not_and_images_have_a_fixed_cost():
    from agents.messages import ImageBlock, ImageSource, ThinkingBlock
    from agents.tokens import IMAGE_TOKENS

    counter = CharRatioEstimator()
    signed = Message.assistant(ThinkingBlock(thinking="z" * 400, signature="sig"))
    unsigned = Message.assistant(ThinkingBlock(thinking="z" * 400))
    assert counter.count_message(signed) > counter.count_message(unsigned)
    image = Message(role="user", content=(ImageBlock(source=ImageSource(media_type="image/png", data="AAAA")),))
    assert counter.count_message(image) >= IMAGE_TOKENS
