/** /v1/projects: the projects and interpreters this gateway serves, and its running workers. */
import { ProjectsResponse } from '../../contract/projects.js';
import type { Gateway } from '../../service/gateway.js';
import { route } from '../route.js';

export function projectsRoutes(gateway: Gateway) {
  return [
    route({
      method: 'get',
      path: '/v1/projects',
      tag: 'projects',
      summary: 'Projects, interpreters and workers',
      description: [
        'The default project, those with live state, the --project-roots under which a request may bind another project (X-Service-Project or ?project=; anything else answers 403 `forbidden`),',
        'the default interpreter and the --python-allowlist a request may pick from (X-Service-Python or ?python=; anything else answers 403 `forbidden`, one that cannot start 503 `worker_unavailable`),',
        'and the running workers, one per (project, interpreter).',
      ].join(' '),
      response: ProjectsResponse,
      errors: [401],
      handler: async () => gateway.listProjects(),
    }),
  ];
}
