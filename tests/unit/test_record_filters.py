"""storage/record_filters.field_filters: the type/trust/scope/project/agent filters that
memory.search and the browse listings share, validated with errors that name the parameter."""

from __future__ import annotations

import pytest

from minionsd.errors import InvalidParams
from minionsd.storage.record_filters import field_filters


def test_each_given_filter_becomes_one_bound_condition():
    where, binds = field_filters({"type": "semantic", "trust": "human", "scope": "project:kestrel",
                                  "project": "kestrel", "agent": "dallas", "query": "x"},
                                 trust=True, empty_names=False)
    assert where == ["r.type = :type", "r.trust = :trust", "r.scope = :scope",
                     "r.project = :project", "r.agent = :agent"]
    assert binds == {"type": "semantic", "trust": "human", "scope": "project:kestrel",
                     "project": "kestrel", "agent": "dallas"}
    assert field_filters({"trust": "human"}, trust=False, empty_names=True) == ([], {})


@pytest.mark.parametrize(("params", "name"), [
    ({"type": "opinion"}, "type"),
    ({"trust": "everyone"}, "trust"),
    ({"scope": 7}, "scope"),
    ({"project": 3}, "project"),
    ({"agent": "a" * 201}, "agent"),
    ({"project": ""}, "project"),
])
def test_a_bad_filter_is_refused_naming_it(params, name):
    with pytest.raises(InvalidParams) as raised:
        field_filters(params, trust=True, empty_names=False)
    assert raised.value.data["param"] == name
    assert f"'{name}'" in str(raised.value) or name in str(raised.value)


def test_empty_names_are_allowed_only_where_asked():
    assert field_filters({"agent": ""}, trust=False, empty_names=True)[1] == {"agent": ""}
    with pytest.raises(InvalidParams, match="non-empty"):
        field_filters({"agent": ""}, trust=False, empty_names=False)
