/** Request and response bodies of the REST API (field names follow the reference server). */
import { InterfaceInfo, JsonObject, Version } from './common.js';
import { z } from './zod.js';

export const CreateInterfaceRequest = z
  .object({
    target: z.string().min(1).describe('Module path to instantiate, or an existing uuid.'),
    version: Version.default([]),
    uuid: z.string().min(1).max(128).nullable().optional().describe('Client-supplied id (create-by-id); an existing id returns that instance unchanged.'),
    label: z.string().nullable().optional(),
    meta: JsonObject.default({}).describe('Client metadata stored with the interface.'),
  })
  .openapi('CreateInterfaceRequest');

export const InterfaceCallRequest = z
  .object({
    target: z.string().min(1).describe('Module path or an existing uuid.'),
    version: Version.default([]),
    meta: JsonObject.default({}),
    method: z.string().min(1).describe('Public method name (no leading underscore).'),
    args: z.array(z.unknown()).default([]),
    kwargs: JsonObject.default({}),
  })
  .openapi('InterfaceCallRequest');

export const InterfaceCallResponse = z.object({ payload: z.unknown() }).openapi('InterfaceCallResponse');

export const InterfaceList = z.array(InterfaceInfo);

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100).describe('At most this many records (1..1000).'),
});

export const UuidParams = z.object({ uuid: z.string().min(1).max(128) });

export const HealthResponse = z
  .object({
    status: z.literal('ok'),
    version: z.string(),
    project: z.string(),
    projects: z.array(z.string()),
    executions_active: z.number().int(),
    workers: z.number().int(),
    uptime_seconds: z.number(),
  })
  .openapi('HealthResponse');

export type CreateInterfaceRequest = z.infer<typeof CreateInterfaceRequest>;
export type InterfaceCallRequest = z.infer<typeof InterfaceCallRequest>;
