/** GET /v1/projects: the projects and interpreters one gateway serves. */
import { z } from './zod.js';

export const WorkerInfo = z
  .object({
    directory: z.string().describe('The project directory the worker serves.'),
    python: z.string().describe('Its interpreter.'),
    pid: z.number().int().nullable(),
    instances: z.number().int().describe('Live interface instances it holds.'),
    calls: z.number().int().describe('Requests it has not answered yet (calls, widget operations, resolves): 0 when idle.'),
    placement: z
      .object({
        job: z.string().nullable().optional().describe('Its Slurm job id.'),
        node: z.string().nullable().optional().describe('The node it runs on (its host name).'),
        state: z.string().nullable().optional().describe('Slurm state of its job as the gateway last saw it: PENDING (listed before the worker is up) or RUNNING.'),
        reason: z.string().nullable().optional().describe('While PENDING: Slurm’s reason (Resources, Priority, …).'),
        resources: z.record(z.string(), z.unknown()).optional().describe('What its allocation asked for (the keys of a dispatch’s resources).'),
      })
      .optional()
      .describe('With `--workers slurm` only: where the worker runs.'),
  })
  .openapi('WorkerInfo');

export const ProjectsResponse = z
  .object({
    default: z.string().describe('The launch project (requests without X-Service-Project).'),
    open: z.array(z.string()).describe('Projects with live state (an opened index), the default first.'),
    roots: z.array(z.string()).describe('--project-roots: a request may bind any project under these.'),
    python: z.string().describe('The default interpreter (--python).'),
    python_allowlist: z.array(z.string()).describe('Further interpreters a request may pick with X-Service-Python or ?python= (--python-allowlist).'),
    workers: z.array(WorkerInfo).describe('Running workers, one per (project, interpreter), and with --workers slurm one per set of class resources, pending ones included (pid null); stopped ones are not listed.'),
  })
  .openapi('ProjectsResponse');

/** What one gateway of a group asks another (docs/operating/several-gateways.md): not part of the client API. */
export const PeerInstanceResponse = z.object({
  uuid: z.string(),
  serving: z.boolean().describe('This gateway serves the live instance under a lease it holds (or cannot renew: the index is away for it).'),
});
