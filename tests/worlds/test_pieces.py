"""A tool's state stored in pieces (worlds.pieces): what the rows give back is the state exactly, dict
order included, after any sequence of changes; a change to one record writes that record (and the
skeleton of its collection when the keys changed), not the state."""

import json
import random

import pytest

from worlds import pieces


def _apply(store: dict[str, tuple[str, object]], puts, gone) -> None:
    """What the database does with a call's rows: delete the gone paths, upsert the new rows."""
    assert not {p for p, _, _ in puts} & set(gone), "no path is both written and deleted"
    assert len({p for p, _, _ in puts}) == len(puts), "each path is written once"
    for path in gone:
        del store[pieces.path_text(path)]
    for path, shape, data in puts:
        store[pieces.path_text(path)] = (shape, json.loads(json.dumps(data)))  # stored as JSON


def _rows(store):
    return [(p, shape, data) for p, (shape, data) in store.items()]


def _same(a, b) -> bool:
    return json.dumps(a) == json.dumps(b)  # == ignores dict order; the wire does not


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    monkeypatch.setattr(pieces, "LEAF_BYTES", 200)


def _state():
    return {
        "users": {f"U{i}": {"name": f"user {i}", "bot": i == 0} for i in range(6)},
        "messages": [{"ts": f"{i}.0", "text": "x" * 30, "versions": [f"v{i}"]} for i in range(8)],
        "repos": {
            "acme/orders": {"issues": {str(n): {"title": f"issue {n}", "labels": []} for n in range(1, 9)}}
        },
        "counter": 3,
    }


def test_a_state_stored_whole_is_split_by_its_first_change_and_reads_back_exactly():
    state = _state()
    store = {pieces.ROOT: (pieces.LEAF, json.loads(json.dumps(state)))}  # as start_world stores it
    node = pieces.fingerprint(state)
    state["counter"] = 4
    puts, gone = [], []
    node = pieces.diff(state, node, (), puts, gone)
    _apply(store, puts, gone)
    assert store[pieces.ROOT][0] == pieces.DICT and len(store) > 20
    value, stored_node = pieces.assemble(_rows(store))
    assert _same(value, state)
    state["counter"] = 5
    puts, gone = [], []
    again = pieces.diff(state, stored_node, (), puts, gone)
    assert [p for p, _, _ in puts] == [("counter",)] and not gone
    _apply(store, puts, gone)
    assert _same(pieces.assemble(_rows(store))[0], state)
    assert type(again) is pieces.Split


def test_one_record_changed_writes_that_record_only():
    state = _state()
    store: dict = {}
    puts, gone = [], []
    node = pieces.diff(state, None, (), puts, gone)
    _apply(store, puts, gone)
    state["repos"]["acme/orders"]["issues"]["3"]["labels"].append("bug")
    puts, gone = [], []
    node = pieces.diff(state, node, (), puts, gone)
    assert [(p, shape) for p, shape, _ in puts] == [(("repos", "acme/orders", "issues", "3"), pieces.LEAF)]
    state["messages"].append({"ts": "9.0", "text": "new", "versions": ["v9"]})
    puts, gone = [], []
    node = pieces.diff(state, node, (), puts, gone)
    assert sorted(p for p, _, _ in puts) == [("messages",), ("messages", 8)], "the length and the new item"
    state["repos"]["acme/orders"]["issues"].pop("5")
    puts, gone = [], []
    pieces.diff(state, node, (), puts, gone)
    assert [p for p, _, _ in puts] == [("repos", "acme/orders", "issues")] and gone == [
        ("repos", "acme/orders", "issues", "5")
    ]


def test_any_sequence_of_changes_reads_back_exactly():
    rng = random.Random(15)
    state = _state()
    store = {pieces.ROOT: (pieces.LEAF, json.loads(json.dumps(state)))}
    node = pieces.fingerprint(state)

    def containers(value, out):
        if isinstance(value, dict | list):
            out.append(value)
            for child in value.values() if isinstance(value, dict) else value:
                containers(child, out)
        return out

    for step in range(400):
        target = rng.choice(containers(state, []))
        roll = rng.random()
        new = rng.choice([7, "text" * rng.randint(1, 20), [1, 2, {"a": "b" * 40}], {"k": "v" * 60}, None])
        if isinstance(target, dict):
            keys = list(target)
            if roll < 0.3 or not keys:
                target[f"n{step}"] = new
            elif roll < 0.5:
                target.pop(rng.choice(keys))
            elif roll < 0.6:  # the same keys in another order
                items = list(target.items())
                rng.shuffle(items)
                target.clear()
                target.update(items)
            else:
                target[rng.choice(keys)] = new
        else:
            if roll < 0.3 or not target:
                target.append(new)
            elif roll < 0.5:
                target.pop(rng.randrange(len(target)))
            elif roll < 0.6:
                target.insert(0, new)
            else:
                target[rng.randrange(len(target))] = new
        if step % 7 == 0:  # a type change at a split path
            key = rng.choice(list(state))
            state[key] = rng.choice([[*range(60)], {"x": "y" * 300}, "flat", {1: "int keys stay whole"}])
        puts, gone = [], []
        node = pieces.diff(state, node, (), puts, gone)
        _apply(store, puts, gone)
        if step % 20 == 0 or step == 399:
            value, node = pieces.assemble(_rows(store))
            expected = json.loads(json.dumps(state))
            assert _same(value, expected), step
    assert any(shape != pieces.LEAF for shape, _ in store.values()), "the state was split"


def test_rows_that_miss_a_piece_are_refused():
    state = _state()
    puts, gone = [], []
    pieces.diff(state, None, (), puts, gone)
    store: dict = {}
    _apply(store, puts, gone)
    del store[pieces.path_text(("users", "U3"))]
    with pytest.raises(ValueError, match=r'misses its row \["users","U3"\]'):
        pieces.assemble(_rows(store))
    with pytest.raises(ValueError, match="no rows"):
        pieces.assemble([])
