/**
 * Entry point for the scripted model servers used by integration tests (OpenAI chat-completions and
 * Anthropic messages over SSE on 127.0.0.1), re-exporting the step language and both starters.
 */
export { startAnthropicServer } from "./anthropicServer.ts"
export { startOpenAIServer } from "./openaiServer.ts"
export { bypassProxyForLoopback } from "./scriptedHttp.ts"
export type {
  FnStep,
  HttpErrorStep,
  RecordedRequest,
  ScriptedFinish,
  ScriptedServer,
  ScriptedToolCall,
  ScriptedUsage,
  StallStep,
  Step,
  TurnStep,
} from "./scriptedSteps.ts"
