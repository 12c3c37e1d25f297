/**
 * The scripted model servers (OpenAI chat-completions and Anthropic messages over SSE on 127.0.0.1):
 * the step language and both starters. Part of `kintsugi-runtime/testing`.
 */
export { startAnthropicServer } from "./anthropicServer.ts"
export { startOpenAIServer } from "./openaiServer.ts"
export { bypassProxyForLoopback, CREDENTIAL_HEADERS } from "./scriptedHttp.ts"
export type {
  FnStep,
  HttpErrorStep,
  RecordedRequest,
  ScriptedApi,
  ScriptedFinish,
  ScriptedServer,
  ScriptedToolCall,
  ScriptedUsage,
  StallStep,
  Step,
  TurnStep
} from "./scriptedSteps.ts"
