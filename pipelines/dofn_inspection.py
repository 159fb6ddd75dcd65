"""Beam's inspection of a DoFn, done once per DoFn object and once per function.

Beam 2.77 asks `userstate.get_dofn_specs` whether a DoFn holds state or timers about seven times a ParDo: twice as
the ParDo is made, three times as the pipeline becomes protos, twice as a worker builds its bundle processor (and
on our DaskRunner at every task). Each call takes `inspect.signature` of every method the DoFn has, 28 for the
smallest DoFn: 0.56 ms a call on this project's 2-core machine, a third of what a pipeline costs to build and run
before it reads a row (a pairs stage's 67 transforms: docs/benchmarks.md, "Beam's fixed cost: each DoFn inspected
once").

The answers cannot change while a function keeps its code, defaults and annotations, nor for one DoFn object,
whose methods are its class's: so `get_dofn_specs` is remembered per DoFn object and the signature behind
`core.get_function_args_defaults` per function, both weakly (a finished job's DoFns and lambdas are not kept) and
both returned as fresh copies (callers may change what they get). A function is checked against what it was
inspected with, so one whose defaults or code were replaced is inspected again; anything that is not a plain
function or a method of one (builtins, partials, callable objects) goes to Beam's own code every time. Errors
(a DoFn with a parameter twice) are raised every time, never remembered. The same goes for ParDo's check of a
`process` method for both `yield` and `return`, which reads and tokenises the method's source each ParDo made
(1.3% of a pairs stage at 10^4): remembered per code object.

`install()` puts them in Beam's place; `job.run_stage` calls it before it builds a stage (the launching process,
and the DirectRunner's in-process worker), and so does our DaskRunner in each worker process before a task inspects
its DoFn. Elsewhere (Dataflow's workers, a pipeline built without `run_stage`) Beam inspects as before: slower, the
same answers. `uninstall()` gives Beam its functions back.
"""

from __future__ import annotations

import types
import weakref

from apache_beam.transforms import core, userstate

# Beam's own functions; a Beam without them (a later version) is left as it is: install() does nothing there
_beams_specs = getattr(userstate, "get_dofn_specs", None)
_beams_arguments = getattr(core, "get_function_args_defaults", None)
AVAILABLE = _beams_specs is not None and _beams_arguments is not None
# ParDo's check of a process method's source for both `yield` and `return` (a warning only); remembered if present
_beams_yield_check = getattr(core, "_check_fn_use_yield_and_return", None)
_arguments: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> {bound: (inspected, result)}
_specs: dict[int, tuple[weakref.ref, tuple[frozenset, frozenset]]] = {}  # id(DoFn) -> (the DoFn, its specs)
_yield_checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # code object -> Beam's answer


def _inspected(function: types.FunctionType) -> tuple:
    """What a function's signature is made of: if any of these is another object, it is inspected again."""
    return (function.__code__, function.__defaults__, function.__kwdefaults__, function.__annotations__,
            getattr(function, "__signature__", None), getattr(function, "__wrapped__", None))


def function_args_defaults(f) -> tuple[list, list]:
    """core.get_function_args_defaults, remembered per plain function (bound to an object or not)."""
    bound = isinstance(f, types.MethodType)
    function = f.__func__ if bound else f
    if not isinstance(function, types.FunctionType):
        return _beams_arguments(f)
    state = _inspected(function)
    held = _arguments.get(function, {}).get(bound)
    if held is None or any(a is not b for a, b in zip(held[0], state)):
        args, defaults = _beams_arguments(f)
        held = (state, (tuple(args), tuple(defaults)))
        _arguments.setdefault(function, {})[bound] = held
    args, defaults = held[1]
    return list(args), list(defaults)


def dofn_specs(dofn) -> tuple[set, set]:
    """userstate.get_dofn_specs, remembered per DoFn object."""
    key = id(dofn)
    held = _specs.get(key)
    if held is None or held[0]() is not dofn:
        state, timers = _beams_specs(dofn)
        try:
            ref = weakref.ref(dofn, lambda _: _specs.pop(key, None))
        except TypeError:  # an object without weak references (__slots__): not remembered
            return state, timers
        held = (ref, (frozenset(state), frozenset(timers)))
        _specs[key] = held
    state, timers = held[1]
    return set(state), set(timers)


def uses_yield_and_return(fn) -> bool:
    """core._check_fn_use_yield_and_return, remembered per code object: Beam reads and tokenises the method's
    source at every ParDo made (getsourcelines), though the source of one code object does not change. Its
    warning about a `return None` is then logged once a method, not once a ParDo."""
    function = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if not isinstance(function, types.FunctionType):
        return _beams_yield_check(fn)
    code = function.__code__
    if code not in _yield_checked:
        _yield_checked[code] = _beams_yield_check(fn)
    return _yield_checked[code]


def install() -> None:
    if AVAILABLE:
        userstate.get_dofn_specs = dofn_specs
        core.get_function_args_defaults = function_args_defaults
        if _beams_yield_check is not None:
            core._check_fn_use_yield_and_return = uses_yield_and_return


def uninstall() -> None:
    if AVAILABLE:
        userstate.get_dofn_specs = _beams_specs
        core.get_function_args_defaults = _beams_arguments
        if _beams_yield_check is not None:
            core._check_fn_use_yield_and_return = _beams_yield_check
