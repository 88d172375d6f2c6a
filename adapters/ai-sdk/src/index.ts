export {
  createEvalconsoleHandler,
  replyFromResult,
  runGenerateConfig,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_STEPS,
  type AgentLike,
  type CommonOptions,
  type EvalconsoleContext,
  type EvalconsoleHandler,
  type EvalconsoleHandlerOptions,
  type GenerateConfig,
  type RunFunction,
  type RunResult,
} from './handler.js';
export { toNodeHandler, type NodeHandler } from './node.js';
export {
  parseEvalconsoleRequest,
  scenarioToMessages,
  ProtocolError,
  PROTOCOL,
  TOOL_MESSAGE_PREFIX,
  type EvalconsoleReply,
  type EvalconsoleRequest,
  type Scenario,
  type ScenarioMessage,
  type ScenarioRole,
  type ToolCallRecord,
  type ToolCallStatus,
} from './protocol.js';
export {
  toolCallsFromResult,
  toolCallsFromSteps,
  errorMessage,
  type ContentPartLike,
  type GenerateTextResultLike,
  type StepLike,
} from './tool-calls.js';
