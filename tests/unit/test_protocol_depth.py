"""decode_line measures a message's nesting with a walk over its containers only; it must give
the depth the full walk (which also cleans strings) gives."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.rpc import protocol

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                max_size=3),
    max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(message=st.one_of(st.lists(JSON), st.dictionaries(st.text(max_size=2), JSON)))
def test_the_container_walk_gives_the_full_walks_depth(message):
    assert protocol._depth(copy.deepcopy(message)) == protocol._walk(copy.deepcopy(message),
                                                                     clean=True)


def test_a_message_one_level_too_deep_is_refused():
    deep = {"jsonrpc": "2.0", "id": 1, "method": "status", "params": {}}
    inner = deep["params"]
    for _ in range(protocol.MAX_NESTING - 2):
        inner["x"] = {}
        inner = inner["x"]
    assert protocol._depth(deep) == protocol.MAX_NESTING
    protocol.decode_line(json.dumps(deep).encode())
    inner["x"] = []
    try:
        protocol.decode_line(json.dumps(deep).encode())
    except protocol.TooDeep as exc:
        assert exc.request_id == 1
    else:
        raise AssertionError("a message nested MAX_NESTING + 1 levels was accepted")
