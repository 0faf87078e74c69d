from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
OUTCOME_DENIED: Outcome
OUTCOME_ERROR: Outcome
OUTCOME_OK: Outcome
OUTCOME_UNSPECIFIED: Outcome

class Artifact(_message.Message):
    __slots__ = ["created_unix_nano", "key_decisions", "modified_files", "new_patterns", "potential_gotchas", "source_session"]
    CREATED_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    KEY_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_FILES_FIELD_NUMBER: _ClassVar[int]
    NEW_PATTERNS_FIELD_NUMBER: _ClassVar[int]
    POTENTIAL_GOTCHAS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SESSION_FIELD_NUMBER: _ClassVar[int]
    created_unix_nano: int
    key_decisions: _containers.RepeatedScalarFieldContainer[str]
    modified_files: _containers.RepeatedScalarFieldContainer[str]
    new_patterns: _containers.RepeatedScalarFieldContainer[str]
    potential_gotchas: _containers.RepeatedScalarFieldContainer[str]
    source_session: str
    def __init__(self, key_decisions: _Optional[_Iterable[str]] = ..., modified_files: _Optional[_Iterable[str]] = ..., new_patterns: _Optional[_Iterable[str]] = ..., potential_gotchas: _Optional[_Iterable[str]] = ..., source_session: _Optional[str] = ..., created_unix_nano: _Optional[int] = ...) -> None: ...

class AttachRequest(_message.Message):
    __slots__ = ["agent", "host_broker_id", "session_id", "telemetry_service"]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    HOST_BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TELEMETRY_SERVICE_FIELD_NUMBER: _ClassVar[int]
    agent: str
    host_broker_id: int
    session_id: str
    telemetry_service: str
    def __init__(self, host_broker_id: _Optional[int] = ..., session_id: _Optional[str] = ..., agent: _Optional[str] = ..., telemetry_service: _Optional[str] = ...) -> None: ...

class AttachResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CheckpointAck(_message.Message):
    __slots__ = ["checkpoint"]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    checkpoint: int
    def __init__(self, checkpoint: _Optional[int] = ...) -> None: ...

class CheckpointRequest(_message.Message):
    __slots__ = ["label", "task_id"]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    label: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., label: _Optional[str] = ...) -> None: ...

class ChunkAck(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ChunkList(_message.Message):
    __slots__ = ["done"]
    DONE_FIELD_NUMBER: _ClassVar[int]
    done: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, done: _Optional[_Iterable[int]] = ...) -> None: ...

class ChunkMark(_message.Message):
    __slots__ = ["chunk", "file", "task_id"]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    chunk: int
    file: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., file: _Optional[str] = ..., chunk: _Optional[int] = ...) -> None: ...

class ChunksRequest(_message.Message):
    __slots__ = ["file", "task_id"]
    FILE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    file: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., file: _Optional[str] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ExportStateRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class FileList(_message.Message):
    __slots__ = ["files"]
    FILES_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[RunFile]
    def __init__(self, files: _Optional[_Iterable[_Union[RunFile, _Mapping]]] = ...) -> None: ...

class FilesRequest(_message.Message):
    __slots__ = ["task_id"]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class Hints(_message.Message):
    __slots__ = ["directories", "files", "technologies"]
    DIRECTORIES_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    TECHNOLOGIES_FIELD_NUMBER: _ClassVar[int]
    directories: _containers.RepeatedScalarFieldContainer[str]
    files: _containers.RepeatedScalarFieldContainer[str]
    technologies: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, files: _Optional[_Iterable[str]] = ..., directories: _Optional[_Iterable[str]] = ..., technologies: _Optional[_Iterable[str]] = ...) -> None: ...

class ImportStateResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Info(_message.Message):
    __slots__ = ["capacity", "description", "exports_state", "name", "technologies", "version"]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXPORTS_STATE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TECHNOLOGIES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    capacity: int
    description: str
    exports_state: bool
    name: str
    technologies: _containers.RepeatedScalarFieldContainer[str]
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., description: _Optional[str] = ..., technologies: _Optional[_Iterable[str]] = ..., capacity: _Optional[int] = ..., exports_state: bool = ...) -> None: ...

class ProgressAck(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ProgressReport(_message.Message):
    __slots__ = ["cost", "fraction", "message", "task_id"]
    COST_FIELD_NUMBER: _ClassVar[int]
    FRACTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    cost: float
    fraction: float
    message: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., fraction: _Optional[float] = ..., message: _Optional[str] = ..., cost: _Optional[float] = ...) -> None: ...

class RunFile(_message.Message):
    __slots__ = ["name", "path", "sha256", "size"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    name: str
    path: str
    sha256: str
    size: int
    def __init__(self, name: _Optional[str] = ..., path: _Optional[str] = ..., sha256: _Optional[str] = ..., size: _Optional[int] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ["task"]
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class RunResponse(_message.Message):
    __slots__ = ["artifact", "cost", "metrics", "output", "tool_uses"]
    class MetricsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ARTIFACT_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    TOOL_USES_FIELD_NUMBER: _ClassVar[int]
    artifact: Artifact
    cost: float
    metrics: _containers.ScalarMap[str, float]
    output: str
    tool_uses: int
    def __init__(self, output: _Optional[str] = ..., metrics: _Optional[_Mapping[str, float]] = ..., cost: _Optional[float] = ..., tool_uses: _Optional[int] = ..., artifact: _Optional[_Union[Artifact, _Mapping]] = ...) -> None: ...

class SessionState(_message.Message):
    __slots__ = ["data"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class StateAck(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class StateRequest(_message.Message):
    __slots__ = ["section", "task_id"]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    section: str
    task_id: str
    def __init__(self, task_id: _Optional[str] = ..., section: _Optional[str] = ...) -> None: ...

class StateValue(_message.Message):
    __slots__ = ["section", "task_id", "value_json"]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    section: str
    task_id: str
    value_json: bytes
    def __init__(self, task_id: _Optional[str] = ..., section: _Optional[str] = ..., value_json: _Optional[bytes] = ...) -> None: ...

class SummarizeRequest(_message.Message):
    __slots__ = ["task_id"]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    def __init__(self, task_id: _Optional[str] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ["attempt", "context", "feedback", "hints", "id", "idempotency_key", "metadata", "name", "prompt", "run_id", "session_id", "upstream"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    HINTS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    context: str
    feedback: str
    hints: Hints
    id: str
    idempotency_key: str
    metadata: _containers.ScalarMap[str, str]
    name: str
    prompt: str
    run_id: str
    session_id: str
    upstream: _containers.RepeatedCompositeFieldContainer[Upstream]
    def __init__(self, id: _Optional[str] = ..., run_id: _Optional[str] = ..., name: _Optional[str] = ..., prompt: _Optional[str] = ..., hints: _Optional[_Union[Hints, _Mapping]] = ..., idempotency_key: _Optional[str] = ..., attempt: _Optional[int] = ..., metadata: _Optional[_Mapping[str, str]] = ..., session_id: _Optional[str] = ..., upstream: _Optional[_Iterable[_Union[Upstream, _Mapping]]] = ..., context: _Optional[str] = ..., feedback: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ["call_id", "input_json", "kind", "paths", "task_id", "tool"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    input_json: bytes
    kind: str
    paths: _containers.RepeatedScalarFieldContainer[str]
    task_id: str
    tool: str
    def __init__(self, task_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., paths: _Optional[_Iterable[str]] = ..., input_json: _Optional[bytes] = ..., kind: _Optional[str] = ...) -> None: ...

class ToolUse(_message.Message):
    __slots__ = ["at_unix_nano", "call_id", "cost", "duration_nanos", "error", "kind", "outcome", "paths", "task_id", "technologies", "tool"]
    AT_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    DURATION_NANOS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    TECHNOLOGIES_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    at_unix_nano: int
    call_id: str
    cost: float
    duration_nanos: int
    error: str
    kind: str
    outcome: Outcome
    paths: _containers.RepeatedScalarFieldContainer[str]
    task_id: str
    technologies: _containers.RepeatedScalarFieldContainer[str]
    tool: str
    def __init__(self, task_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., paths: _Optional[_Iterable[str]] = ..., technologies: _Optional[_Iterable[str]] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., error: _Optional[str] = ..., duration_nanos: _Optional[int] = ..., cost: _Optional[float] = ..., at_unix_nano: _Optional[int] = ..., kind: _Optional[str] = ...) -> None: ...

class ToolUsesAck(_message.Message):
    __slots__ = ["count"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class Upstream(_message.Message):
    __slots__ = ["artifact", "created_unix_nano", "session_id", "task", "version"]
    ARTIFACT_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_NANO_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    artifact: Artifact
    created_unix_nano: int
    session_id: str
    task: str
    version: int
    def __init__(self, task: _Optional[str] = ..., version: _Optional[int] = ..., session_id: _Optional[str] = ..., created_unix_nano: _Optional[int] = ..., artifact: _Optional[_Union[Artifact, _Mapping]] = ...) -> None: ...

class Verdict(_message.Message):
    __slots__ = ["allow", "guard", "reason"]
    ALLOW_FIELD_NUMBER: _ClassVar[int]
    GUARD_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    allow: bool
    guard: str
    reason: str
    def __init__(self, allow: bool = ..., reason: _Optional[str] = ..., guard: _Optional[str] = ...) -> None: ...

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
