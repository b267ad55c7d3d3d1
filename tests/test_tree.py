"""xla_explorer.tree against nested containers written out by hand."""
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

from xla_explorer import tree

Pair = namedtuple("Pair", "a b")


def test_leaves_come_out_in_order_and_go_back_in_place():
    x, y, z = np.arange(3.0), np.ones(2), np.int32(7)
    nested = {"w": [x, (y, None)], "b": z, "n": 4}
    leaves, treedef = tree.flatten(nested)
    assert len(leaves) == 4
    assert leaves[0] is x and leaves[1] is y and leaves[2] is z and leaves[3] == 4
    assert treedef == (dict, (("w", (list, (("leaf", 0), (tuple, (("leaf", 1), (None, None)))))),
                              ("b", ("leaf", 2)), ("n", ("leaf", 3))))
    back = tree.unflatten(treedef, ["p", "q", "r", "s"])
    assert back == {"w": ["p", ("q", None)], "b": "r", "n": "s"}
    assert type(back["w"]) is list and type(back["w"][1]) is tuple


def test_one_value_is_one_leaf():
    x = np.zeros(2)
    leaves, treedef = tree.flatten(x)
    assert leaves == [x] and treedef == ("leaf", 0)
    assert tree.unflatten(treedef, [5]) == 5


def test_none_and_empty_containers_hold_no_leaf():
    for empty in (None, [], (), {}, [None, ()], {"a": None}):
        leaves, treedef = tree.flatten(empty)
        assert leaves == []
        assert tree.unflatten(treedef, []) == empty


def test_a_named_tuple_comes_back_as_itself_and_a_dict_subclass_as_a_dict():
    p = Pair(1.0, [2.0, 3.0])
    leaves, treedef = tree.flatten(p)
    assert leaves == [1.0, 2.0, 3.0]
    back = tree.unflatten(treedef, [10, 20, 30])
    assert type(back) is Pair and back == Pair(10, [20, 30])
    od = OrderedDict([("b", 1), ("a", 2)])
    leaves, treedef = tree.flatten(od)
    assert leaves == [1, 2]  # the dict's own order, not sorted
    assert tree.unflatten(treedef, [3, 4]) == {"b": 3, "a": 4}


def test_is_leaf_stops_the_walk():
    nested = [(1, 2), [3, (4,)]]
    leaves, treedef = tree.flatten(nested, is_leaf=lambda v: type(v) is tuple)
    assert leaves == [(1, 2), 3, (4,)]
    assert tree.unflatten(treedef, leaves) == nested
    # A leaf by is_leaf even where it would otherwise be None's empty container.
    assert tree.flatten([None], is_leaf=lambda v: v is None)[0] == [None]


def test_leaves_matches_flatten():
    nested = ({"k": [1, 2]}, 3, None, [[4]])
    assert tree.leaves(nested) == [1, 2, 3, 4]


def test_a_container_that_holds_itself_is_refused_with_its_path():
    loop = [1, {"a": 2}]
    loop[1]["self"] = loop
    with pytest.raises(tree.CycleError) as info:
        tree.flatten(loop)
    assert info.value.path == (1, "self")
    shared = [3]
    assert tree.leaves([shared, shared]) == [3, 3]  # held twice is not a cycle


def test_build_sees_each_container_innermost_first_with_its_path():
    seen = []

    def build(path, container):
        seen.append((path, container))
        return ("built", container) if isinstance(container, list) else container
    out = tree.unflatten(tree.flatten({"a": [1, (2, 3)], "b": 4})[1], [5, 6, 7, 8], build)
    assert [p for p, _ in seen] == [("a", 1), ("a",), ()]
    assert out == {"a": ("built", [5, (6, 7)]), "b": 8}


def test_walk_visits_containers_before_their_contents():
    _, treedef = tree.flatten({"a": [1, None], "b": (2,)})
    assert [(p, t[0]) for p, t in tree.walk(treedef)] == [
        ((), dict), (("a",), list), (("a", 0), "leaf"), (("a", 1), None),
        (("b",), tuple), (("b", 0), "leaf")]
