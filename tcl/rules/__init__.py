"""The rule registry: every rule class, in code order, selected by config and torch version."""

from __future__ import annotations

from .base import Example, Rule
from .catalog import (
    CompiledGenerator, ContextVarInCompiledRegion, HookRegisteredInCompiledRegion, RngStateInCompiledRegion,
    SortByTensor, TorchCheckMessage,
)
from .captured import CapturedScalarBranch
from .data_dependent import (
    DataDependentBranch, DataReadingCall, ItemCall, MembershipInTensor, RangeOverTensorData, ScalarConversion,
    SequenceCompareWithTensor, TensorAsSize, TensorAssertWithMessage, TolistCall,
)
from .data_reads import DataReadAsCount
from .dynamic_shapes import DynamicOutputShape, OneHotWithoutNumClasses
from .enums import StrEnumMethod
from .indexing import ZeroDimTensorIndex
from .containers import GrowingContainer
from .crashes import NumberBeforeBreakInFString, SizeComparedWithTensorInList
from .counters import ModuleIntCounter
from .recompiles import DynamicFalseShapeReads, RangeOverIntArgument, VaryingLengthArgument
from .signatures import DeprecatedSignature
from .training import OptimizerCallInCompiledRegion, OptimizerStepInCompiledRegion
from .size_calls import SizeSpecialisingCall
from .specialisation import SizeSpecialisedByPython
from .side_effects import (
    DebuggerCall, DisabledCall, ExplicitGraphBreak, LoggingCall, NumpyRandom, OpenCall, PrintCall,
    SkippedCall, WarningsWarn,
)
from .views import InplaceViewOfInput
from .unsupported import (
    AutogradCall, ClassInCompiledFunction, DataMutation, DeepCopy, InferenceModeQuery,
    ParameterInForward, RecurrentModule, SparseTensor, TensorFormatting, TensorToString,
    UnsupportedContextManager,
)

ALL_RULES: tuple[type[Rule], ...] = tuple(sorted(
    [
        PrintCall, DebuggerCall, OpenCall, LoggingCall, WarningsWarn, SkippedCall,
        ExplicitGraphBreak, DisabledCall, NumpyRandom,
        DataDependentBranch, TensorAssertWithMessage, ItemCall, ScalarConversion, TolistCall,
        TensorAsSize, SequenceCompareWithTensor, DynamicOutputShape, OneHotWithoutNumClasses,
        TensorToString, TensorFormatting, DeepCopy, AutogradCall, ParameterInForward,
        DataMutation, ClassInCompiledFunction, RecurrentModule, InferenceModeQuery, SparseTensor,
        UnsupportedContextManager,
        RngStateInCompiledRegion, HookRegisteredInCompiledRegion, SortByTensor,
        ContextVarInCompiledRegion, TorchCheckMessage, CompiledGenerator,
        ModuleIntCounter, RangeOverIntArgument, DynamicFalseShapeReads, VaryingLengthArgument,
        SizeSpecialisedByPython, SizeSpecialisingCall, GrowingContainer, DataReadAsCount,
        CapturedScalarBranch, RangeOverTensorData, MembershipInTensor, DataReadingCall,
        DeprecatedSignature, ZeroDimTensorIndex, StrEnumMethod, OptimizerCallInCompiledRegion,
        OptimizerStepInCompiledRegion,
        NumberBeforeBreakInFString, SizeComparedWithTensorInList, InplaceViewOfInput,
    ],
    key=lambda rule: rule.code,
))
BY_CODE = {rule.code: rule for rule in ALL_RULES}
assert len(BY_CODE) == len(ALL_RULES), "duplicate rule code"


def selected_rules(config, version) -> list[type[Rule]]:
    return [r for r in ALL_RULES if config.enabled(r.code) and r.applies(version, config.mode)]


__all__ = ["ALL_RULES", "BY_CODE", "Example", "Rule", "selected_rules"]
