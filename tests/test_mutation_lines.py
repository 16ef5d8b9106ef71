"""benchmarks/mutation_lines.py: each mutant is given the tests that executed the statement it mutates."""

import ast
import textwrap

from benchmarks.mutation_lines import (
    check_kills,
    decode_line_map,
    encode_line_map,
    find_source_function,
    get_callers,
    get_changed_span,
    get_entry_line,
    get_statement_span,
    map_file,
    read_function_sources,
)

SOURCE = textwrap.dedent('''\
    def f(a, b=1):
        x = a + b
        if x > 2:
            return g(
                x,
                a,
            )
        return x


    class C:
        def m(self):
            return 1
    ''')

MUTATED = textwrap.dedent('''\
    def x_f__mutmut_orig(a, b=1):
        x = a + b
        if x > 2:
            return g(
                x,
                a,
            )
        return x

    def x_f__mutmut_1(a, b=2):
        x = a + b
        if x > 2:
            return g(
                x,
                a,
            )
        return x

    def x_f__mutmut_2(a, b=1):
        x = a - b
        if x > 2:
            return g(
                x,
                a,
            )
        return x

    def x_f__mutmut_3(a, b=1):
        x = a + b
        if x > 2:
            return g(
                x,
                None,
            )
        return x

    def x_f__mutmut_4(a, b=1):
        x = a + b
        if x >= 2:
            return g(
                x,
                a,
            )
        return x

    class C:
        def xǁCǁm__mutmut_orig(self):
            return 1
        def xǁCǁm__mutmut_1(self):
            return 2
    ''')

# Source lines (1-based) and the tests that executed each.
BY_LINE = {1: {"t::import"}, 2: {"t::a", "t::b"}, 3: {"t::a", "t::b"}, 4: {"t::b"}, 8: {"t::a"}, 13: {"t::c"}}


def test_the_changed_span_is_the_first_and_last_differing_line_of_the_original():
    orig = ["def (a):", "    x = 1", "    return (", "        x,", "    )"]
    assert get_changed_span(orig, ["def (a):", "    x = 2", "    return (", "        x,", "    )"]) == (1, 1)
    assert get_changed_span(orig, ["def (a):", "    x = 1", "    return (", "        None,", "    )"]) == (3, 3)
    assert get_changed_span(orig, ["def (a):", "    return (", "        x,", "    )"]) == (1, 1)  # a line removed


def test_the_statement_span_is_the_smallest_statement_holding_the_change_or_the_whole_function():
    function = find_source_function(ast.parse(SOURCE), "x_f")
    assert get_statement_span(function, 5, 5) == (4, 7)  # an argument of the return's call
    assert get_statement_span(function, 3, 3) == (3, 7)  # the if's test: the if statement
    assert get_statement_span(function, 1, 1) == (1, 8)  # a default argument: the whole function
    assert find_source_function(ast.parse(SOURCE), "xǁCǁm").lineno == 12
    assert find_source_function(ast.parse(SOURCE), "x_missing") is None


def test_each_mutant_gets_the_tests_that_executed_its_statement(tmp_path):
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "mutated.py").write_text(MUTATED)
    assert set(read_function_sources(tmp_path / "mutated.py")) == {
        "x_f__mutmut_orig", "x_f__mutmut_1", "x_f__mutmut_2", "x_f__mutmut_3", "x_f__mutmut_4",
        "xǁCǁm__mutmut_orig", "xǁCǁm__mutmut_1"}
    assert map_file(tmp_path / "m.py", tmp_path / "mutated.py", BY_LINE, "model.m") == {
        "model.m.x_f__mutmut_1": ["t::a", "t::b"],  # the default: any caller (t::import ran only the def line)
        "model.m.x_f__mutmut_2": ["t::a", "t::b"],
        "model.m.x_f__mutmut_3": ["t::b"],  # only t::b reached the return
        "model.m.x_f__mutmut_4": ["t::a", "t::b"],
        "model.m.xǁCǁm__mutmut_1": ["t::c"],
    }


def test_a_recorded_kill_by_a_test_the_map_leaves_out_is_reported(tmp_path):
    kills = tmp_path / "kills.tsv"
    kills.write_text("m.x_f__mutmut_1\tt::a\tcall\t0.1\nm.x_f__mutmut_2\tt::b\tcall\t0.2\nm.x_g__mutmut_1\tt::c\tcall\t1\n")
    line_map = {"m.x_f__mutmut_1": ["t::a"], "m.x_f__mutmut_2": ["t::a"]}  # x_g is not mapped: not counted
    assert check_kills(line_map, kills) == (1, ["m.x_f__mutmut_2\tt::b"])


def test_the_line_map_file_names_each_test_once_and_decodes_to_the_same_map():
    line_map = {"m.x_f__mutmut_1": ["t::b", "t::a"], "m.x_f__mutmut_2": [], "m.x_g__mutmut_1": ["t::a"]}
    encoded = encode_line_map(line_map)
    assert encoded["tests"] == ["t::a", "t::b"]
    assert encoded["mutants"] == {"m.x_f__mutmut_1": [1, 0], "m.x_f__mutmut_2": [], "m.x_g__mutmut_1": [0]}
    assert decode_line_map(encoded) == line_map


CLOSURE = textwrap.dedent('''\
    def make(low):
        """A validator."""
        def check(value):
            return value > low
        return check
    ''')
CLOSURE_MUTATED = textwrap.dedent('''\
    def x_make__mutmut_orig(low):
        """A validator."""
        def check(value):
            return value > low
        return check

    def x_make__mutmut_1(low):
        """A validator."""
        def check(value):
            return value >= low
        return check
    ''')


def test_a_closures_mutant_gets_only_the_tests_that_called_the_function_that_made_it(tmp_path):
    """mutmut switches a mutant on when its function is called: a test that only ran a closure made earlier (at
    import) runs the original's. The entry line (the first statement after the docstring) runs on each call."""
    (tmp_path / "m.py").write_text(CLOSURE)
    (tmp_path / "mutated.py").write_text(CLOSURE_MUTATED)
    function = find_source_function(ast.parse(CLOSURE), "x_make")
    assert get_entry_line(function) == 3
    by_line = {3: {"t::calls_make"}, 4: {"t::calls_make", "t::uses_a_validator_made_at_import"}, 5: {"t::calls_make"}}
    line_map = map_file(tmp_path / "m.py", tmp_path / "mutated.py", by_line, "model.m")
    assert line_map == {"model.m.x_make__mutmut_1": ["t::calls_make"]}
    assert get_callers(line_map) == {"model.m.x_make": {"t::calls_make"}}
