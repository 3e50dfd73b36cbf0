"""Runtimes execute the gate's commands: threads (``ThreadRuntime``, behind
``Orchestrator``), asyncio tasks (``AsyncRuntime``, behind ``AsyncOrchestrator``),
and virtual time (the simulator's). They share the stream-order scheduler, the
steps of a call and the tool box; each owns its calls' outcomes."""

from .call import CallNode, CallRun, CallScheduler, Fate, stored_outcome
from .call_state import CallState
from .pool import Deadlines, WorkerPool
from .schedule import Node, Scheduler, Slots, State
from .tasks import AsyncRuntime, LoopError
from .threads import ThreadEngine, ThreadRuntime
from .tools import (
    CurrentCall,
    Invocation,
    ToolBox,
    Tools,
    TwoPhaseTool,
    coroutine_part,
    current_call,
    is_async_callable,
    running_for,
)

__all__ = [
    "AsyncRuntime",
    "CallNode",
    "CallRun",
    "CallScheduler",
    "CallState",
    "CurrentCall",
    "Deadlines",
    "Fate",
    "Invocation",
    "LoopError",
    "Node",
    "Scheduler",
    "Slots",
    "State",
    "ThreadEngine",
    "ThreadRuntime",
    "ToolBox",
    "Tools",
    "TwoPhaseTool",
    "WorkerPool",
    "coroutine_part",
    "current_call",
    "is_async_callable",
    "running_for",
    "stored_outcome",
]
