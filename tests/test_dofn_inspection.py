"""Beam's DoFn inspection remembered (pipelines/dofn_inspection.py): the same answers as Beam's own, each DoFn
inspected once, nothing kept alive, and stateful DoFns still run."""

from __future__ import annotations

import functools
import gc
import types
import weakref

import apache_beam as beam
import pytest
from apache_beam.coders import VarIntCoder
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import core, userstate
from apache_beam.transforms.userstate import BagStateSpec, TimerSpec, on_timer

from pipelines import dofn_inspection
from pipelines.local_runner import LocalRunner

pytestmark = pytest.mark.skipif(not dofn_inspection.AVAILABLE, reason="this Beam has no get_dofn_specs or "
                                "get_function_args_defaults to remember: install() leaves it as it is")
COUNT = BagStateSpec("count", VarIntCoder())
FLUSH = TimerSpec("flush", userstate.TimeDomain.WATERMARK)


class Plain(beam.DoFn):
    def process(self, element, scale=2):
        yield element * scale


class Stateful(beam.DoFn):
    def process(self, element, seen=beam.DoFn.StateParam(COUNT), flush=beam.DoFn.TimerParam(FLUSH)):
        seen.add(element[1])
        flush.set(0)

    @on_timer(FLUSH)
    def flushed(self, seen=beam.DoFn.StateParam(COUNT)):
        yield sum(seen.read())


class StateTwice(beam.DoFn):
    def process(self, element, a=beam.DoFn.StateParam(COUNT), b=beam.DoFn.StateParam(COUNT)):
        yield element


class Counted(beam.DoFn):
    def process(self, element, seen=beam.DoFn.StateParam(COUNT)):
        seen.add(1)
        yield element[0], len(list(seen.read()))


@pytest.fixture
def installed():
    dofn_inspection.install()
    yield
    dofn_inspection.uninstall()


def dofns():
    return [Plain(), Stateful(), Counted(), beam.Map(lambda x, t=beam.DoFn.TimestampParam: x).fn,
            beam.FlatMap(str.split).fn, beam.ParDo(Plain()).fn]


@pytest.mark.parametrize("dofn", dofns(), ids=lambda d: type(d).__name__)
def test_specs_are_beams_and_a_callers_change_stays_its_own(installed, dofn):
    expected = dofn_inspection._beams_specs(dofn)
    first = userstate.get_dofn_specs(dofn)
    assert first == expected
    first[0].add("changed by a caller")
    assert userstate.get_dofn_specs(dofn) == expected
    assert userstate.is_stateful_dofn(dofn) == bool(expected[0] or expected[1])


class Callable:
    def __call__(self, x, y=3):
        return x


def plain_function(a, b=1, *rest, c=2, **more):
    return a


@pytest.mark.parametrize("f", [plain_function, Plain().process, Plain.process, lambda x, y=beam.DoFn.KeyParam: x,
                               str.strip, len, functools.partial(plain_function, 1), Callable(), Callable().__call__],
                         ids=lambda f: getattr(f, "__name__", type(f).__name__))
def test_arguments_are_beams_for_every_kind_of_callable(installed, f):
    expected = dofn_inspection._beams_arguments(f)
    got = core.get_function_args_defaults(f)
    assert got == expected
    got[0].append("changed by a caller")
    assert core.get_function_args_defaults(f) == expected


def test_a_function_whose_defaults_change_is_inspected_again(installed):
    def f(x, y=1):
        return x

    assert core.get_function_args_defaults(f) == (["x", "y"], [1])
    f.__defaults__ = (beam.DoFn.TimestampParam,)
    assert core.get_function_args_defaults(f) == (["x", "y"], [beam.DoFn.TimestampParam])
    f.__code__ = (lambda x, y=1, z=2: x).__code__
    f.__defaults__ = (1, 2)
    assert core.get_function_args_defaults(f) == (["x", "y", "z"], [1, 2])


def test_each_dofn_is_inspected_once_as_a_pipeline_is_built_and_turned_into_protos(installed, monkeypatch,
                                                                                     unrun_pipeline):
    inspected = []
    beams = dofn_inspection._beams_specs
    monkeypatch.setattr(dofn_inspection, "_beams_specs", lambda dofn: inspected.append(type(dofn)) or beams(dofn))
    pipeline = unrun_pipeline()
    (pipeline | beam.Create([1, 2], reshuffle=False) | "A" >> beam.ParDo(Plain()) | "B" >> beam.ParDo(Plain()))
    pipeline.to_runner_api()
    pipeline.to_runner_api()
    assert inspected.count(Plain) == 2  # once each object; Beam itself inspects each of them five times


def test_a_dofn_that_says_a_state_twice_is_refused_every_time(installed):
    for _ in range(2):
        with pytest.raises(ValueError, match="duplicate"):
            userstate.get_dofn_specs(StateTwice())


def test_nothing_inspected_is_kept_alive(installed):
    dofn = Plain()

    def f(x, y=2):
        return x

    userstate.get_dofn_specs(dofn)
    core.get_function_args_defaults(f)
    key, dofn_ref, f_ref = id(dofn), weakref.ref(dofn), weakref.ref(f)
    assert key in dofn_inspection._specs and f in dofn_inspection._arguments
    del dofn, f
    gc.collect()
    assert dofn_ref() is None and f_ref() is None
    assert key not in dofn_inspection._specs


def test_stateful_dofns_run_as_before(installed):
    with beam.Pipeline(runner=LocalRunner()) as pipeline:
        counted = (pipeline | beam.Create([("a", 1), ("a", 2), ("b", 3)], reshuffle=False)
                   | beam.ParDo(Counted()))
        assert_that(counted, equal_to([("a", 1), ("a", 2), ("b", 1)]))


def test_uninstall_gives_beams_functions_back():
    dofn_inspection.install()
    dofn_inspection.uninstall()
    assert userstate.get_dofn_specs is dofn_inspection._beams_specs
    assert core.get_function_args_defaults is dofn_inspection._beams_arguments
    assert getattr(core, "_check_fn_use_yield_and_return", None) is dofn_inspection._beams_yield_check
    assert isinstance(dofn_inspection._beams_specs, types.FunctionType)


class YieldsAndReturns(beam.DoFn):
    def process(self, element):
        if element:
            return [element]
        yield element


needs_yield_check = pytest.mark.skipif(dofn_inspection._beams_yield_check is None,
                                       reason="this Beam has no _check_fn_use_yield_and_return to remember")


@needs_yield_check
@pytest.mark.parametrize("fn", [Plain().process, YieldsAndReturns().process, YieldsAndReturns.process, str.split,
                                lambda x: [x], functools.partial(str.split, sep=" ")], ids=repr)
def test_the_yield_and_return_check_is_beams(installed, fn):
    for _ in range(2):
        assert core._check_fn_use_yield_and_return(fn) == dofn_inspection._beams_yield_check(fn)
    assert core._check_fn_use_yield_and_return(YieldsAndReturns().process) is True


@needs_yield_check
def test_each_process_method_is_read_once_as_pardos_are_made(installed, monkeypatch):
    read = []
    beams = core._get_function_body_without_inners
    monkeypatch.setattr(core, "_get_function_body_without_inners", lambda f: read.append(f.__name__) or beams(f))

    class Fresh(beam.DoFn):  # a process method no other test has had checked
        def process(self, element):
            yield element

    for _ in range(3):
        beam.ParDo(Fresh())
    assert read == ["process"]  # Beam reads it at every ParDo
