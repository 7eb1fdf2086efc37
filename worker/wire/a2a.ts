// The Agent2Agent protocol (A2A v1.0, the version @a2a-js/sdk 1.3 speaks) on baton's wire: the
// JSON-RPC 2.0 envelope and the params of the methods an A2A agent of baton answers, the objects it
// answers with (Task, Message, status and artifact updates, the Agent Card) in A2A's JSON form
// (camelCase fields, enums as `TASK_STATE_…`), and the error codes of both specs. A leaf: the
// Worker's A2A layer (worker/a2a-routes.ts) and the pure mapping (rules/a2a-task.ts) read it.
import * as z from "zod/mini";
import { a2aPushConfigSchema } from "./push.ts";

/** JSON-RPC 2.0's codes and A2A's own (spec §5.4). */
export const A2A_ERRORS = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotificationNotSupported: -32003,
  unsupportedOperation: -32004,
  contentTypeNotSupported: -32005,
  extendedCardNotConfigured: -32007,
  versionNotSupported: -32009,
} as const;

export const A2A_PROTOCOL_VERSION = "1.0";
/** Bytes of one JSON-RPC request: a message's text and its envelope. */
export const A2A_REQUEST_BYTES = 96 * 1024;
/** Tasks one ListTasks page carries at most (and by default). */
export const A2A_PAGE_SIZE = { max: 100, default: 50 } as const;

const rpcId = z.union([z.string().check(z.maxLength(128)), z.int(), z.null()]);

/** The envelope of every call; `params` is checked per method below. */
export const a2aRequestSchema = z.object({
  jsonrpc: z.literal("2.0"),
  id: rpcId,
  method: z.string().check(z.minLength(1), z.maxLength(128)),
  params: z.optional(z.record(z.string(), z.unknown())),
});
export type A2ARequest = z.infer<typeof a2aRequestSchema>;
export type A2ARpcId = z.infer<typeof rpcId>;

const partSchema = z.object({
  text: z.optional(z.string()),
  raw: z.optional(z.string()),
  url: z.optional(z.string()),
  data: z.optional(z.unknown()),
  metadata: z.optional(z.record(z.string(), z.unknown())),
  filename: z.optional(z.string()),
  mediaType: z.optional(z.string()),
});

/** An id a client gives (messageId, contextId): printable, at most 120 characters (a messageId, hashed with the caller's credential, is the post's Idempotency-Key). */
const clientId = z.string().check(z.minLength(1), z.maxLength(120), z.regex(/^[^\p{Cc}\p{Cf}]+$/u));

export const a2aMessageSchema = z.object({
  messageId: clientId,
  contextId: z.optional(clientId),
  taskId: z.optional(z.string().check(z.maxLength(128))),
  role: z.enum(["ROLE_USER", "ROLE_AGENT"]),
  parts: z.array(partSchema).check(z.minLength(1), z.maxLength(64)),
  metadata: z.optional(z.record(z.string(), z.unknown())),
  extensions: z.optional(z.array(z.string())),
  referenceTaskIds: z.optional(z.array(z.string())),
});
export type A2AIncomingMessage = z.infer<typeof a2aMessageSchema>;

export const a2aSendParamsSchema = z.object({
  tenant: z.optional(z.string()),
  message: a2aMessageSchema,
  configuration: z.optional(z.object({
    acceptedOutputModes: z.optional(z.array(z.string())),
    /** A push target for the task the message starts (wire/push.ts), set before SendMessage waits. */
    taskPushNotificationConfig: z.optional(a2aPushConfigSchema),
    historyLength: z.optional(z.int().check(z.gte(0))),
    /** false (the default): SendMessage waits, at most A2A_SEND_WAIT_MS, for an end or a question. */
    returnImmediately: z.optional(z.boolean()),
  })),
  metadata: z.optional(z.record(z.string(), z.unknown())),
});

export const a2aTaskIdParamsSchema = z.object({
  tenant: z.optional(z.string()),
  id: z.string().check(z.minLength(1), z.maxLength(128)),
  historyLength: z.optional(z.int().check(z.gte(0))),
  metadata: z.optional(z.record(z.string(), z.unknown())),
});

export const a2aListParamsSchema = z.object({
  tenant: z.optional(z.string()),
  contextId: z.optional(z.string()),
  status: z.optional(z.string()),
  pageSize: z.optional(z.int().check(z.gte(1), z.lte(A2A_PAGE_SIZE.max))),
  pageToken: z.optional(z.string().check(z.maxLength(16))),
  historyLength: z.optional(z.int().check(z.gte(0))),
  includeArtifacts: z.optional(z.boolean()),
  statusTimestampAfter: z.optional(z.string()),
});

export const TASK_STATES = [
  "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
  "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED",
] as const;
export type TaskState = (typeof TASK_STATES)[number];

export interface A2APart { text: string; mediaType?: string }
export interface A2AMessage { messageId: string; contextId?: string; taskId?: string; role: "ROLE_USER" | "ROLE_AGENT"; parts: A2APart[]; metadata?: Record<string, unknown> }
export interface A2ATaskStatus { state: TaskState; message?: A2AMessage; timestamp: string }
export interface A2AArtifact { artifactId: string; name?: string; parts: A2APart[] }
export interface A2ATask { id: string; contextId: string; status: A2ATaskStatus; artifacts?: A2AArtifact[]; history?: A2AMessage[]; metadata: Record<string, unknown> }
export interface A2AStatusUpdate { taskId: string; contextId: string; status: A2ATaskStatus; metadata?: Record<string, unknown> }
export interface A2AArtifactUpdate { taskId: string; contextId: string; artifact: A2AArtifact; append: boolean; lastChunk: boolean }
/** One event of a stream (SendStreamingMessage, SubscribeToTask): exactly one key. */
export type A2AStreamResponse = { task: A2ATask } | { statusUpdate: A2AStatusUpdate } | { artifactUpdate: A2AArtifactUpdate };

/** The Agent Card (spec §4.4.1), as much of it as baton fills. */
export const a2aAgentCardSchema = z.object({
  name: z.string(),
  description: z.string(),
  version: z.string(),
  supportedInterfaces: z.array(z.object({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string() })),
  provider: z.optional(z.object({ organization: z.string(), url: z.string() })),
  capabilities: z.object({ streaming: z.boolean(), pushNotifications: z.boolean() }),
  securitySchemes: z.record(z.string(), z.object({ httpAuthSecurityScheme: z.object({ scheme: z.string(), description: z.string() }) })),
  securityRequirements: z.array(z.object({ schemes: z.record(z.string(), z.object({ list: z.array(z.string()) })) })),
  defaultInputModes: z.array(z.string()),
  defaultOutputModes: z.array(z.string()),
  skills: z.array(z.object({ id: z.string(), name: z.string(), description: z.string(), tags: z.array(z.string()) })),
});
export type A2AAgentCard = z.infer<typeof a2aAgentCardSchema>;
