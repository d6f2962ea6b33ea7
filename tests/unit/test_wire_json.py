"""A result encoded ahead (text/wire_json.Encoded) gives the same reply bytes as the plain
result encoded with its envelope, whatever it holds: non-ASCII text, lone surrogates (the
whole reply then goes out in ASCII escapes), awkward ids, values JSON cannot carry (the same
-32603 reply), in single replies and in batches."""

from __future__ import annotations

import asyncio
import json
import math

from hypothesis import example, given, settings
from hypothesis import strategies as st

from minionsd.rpc.protocol import Dispatcher, encode_reply
from minionsd.text.wire_json import Encoded, plain

_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12)
_SCALARS = (st.none() | st.booleans() | st.integers() | _TEXT
            | st.floats(allow_nan=False, allow_infinity=False))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=20)
_IDS = st.none() | st.integers() | _TEXT | st.floats(allow_nan=False, allow_infinity=False)


class _Unserialisable:
    pass


@settings(max_examples=400, deadline=None)
@given(value=_VALUES, request_id=_IDS)
@example(value={"t": "caf\u00e9 \ud800"}, request_id="\u00e9")  # the whole reply in ASCII
@example(value="caf\u00e9", request_id="x\udc00")  # a lone surrogate in the id only
def test_an_encoded_result_gives_the_plain_replys_bytes(value, request_id):
    reply = {"jsonrpc": "2.0", "id": request_id, "result": value}
    expected = encode_reply(reply, "m")
    assert encode_reply(reply | {"result": Encoded(value)}, "m") == expected
    assert plain(Encoded(value)) is value and plain(value) is value


@given(value=_VALUES, request_id=_IDS)
def test_a_result_json_cannot_carry_gives_the_same_error_reply(value, request_id):
    circular: list = [value]
    circular.append(circular)
    for bad in ({"x": _Unserialisable()}, {1, 2}, circular, [value, b"bytes"]):
        reply = {"jsonrpc": "2.0", "id": request_id, "result": bad}
        expected = encode_reply(reply, "m")
        assert b'"code":-32603' in expected
        assert encode_reply(reply | {"result": Encoded(bad)}, "m") == expected


def test_nan_and_an_envelope_of_other_keys_go_out_as_before():
    for value in (math.nan, [math.inf, -math.inf]):
        reply = {"jsonrpc": "2.0", "id": 1, "result": value}
        assert encode_reply(reply | {"result": Encoded(value)}) == encode_reply(reply)
    odd = {"id": 1, "jsonrpc": "2.0", "result": Encoded({"a": "é"})}
    assert encode_reply(odd) == b'{"id":1,"jsonrpc":"2.0","result":{"a":"\xc3\xa9"}}'


@settings(max_examples=60, deadline=None)
@given(values=st.lists(_VALUES, min_size=1, max_size=5), ids=st.lists(_IDS, min_size=5,
                                                                     max_size=5))
def test_a_batch_of_encoded_results_is_the_batch_of_plain_ones(values, ids):
    async def ahead(n):
        return Encoded(values[n])

    async def behind(n):
        return values[n]

    batch = json.dumps([{"jsonrpc": "2.0", "id": ids[n], "method": "m", "params": [n]}
                        for n in range(len(values))], ensure_ascii=True).encode()

    async def both():
        return (await Dispatcher({"m": ahead}).handle_bytes(batch),
                await Dispatcher({"m": behind}).handle_bytes(batch))

    encoded, plain_reply = asyncio.run(both())
    assert encoded == plain_reply
