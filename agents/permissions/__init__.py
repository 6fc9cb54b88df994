"""Permissions: rules in the familiar Tool(pattern) syntax and the runtime that applies them."""

from agents.permissions.rules import Rule, parse_rule, parse_rules
from agents.permissions.runtime import (
    AuditLog,
    Decision,
    HeadlessPolicy,
    PermissionMode,
    PermissionRuntime,
    permission_subject,
)

__all__ = [
    "AuditLog",
    "Decision",
    "HeadlessPolicy",
    "PermissionMode",
    "PermissionRuntime",
    "Rule",
    "parse_rule",
    "parse_rules",
    "permission_subject",
]
