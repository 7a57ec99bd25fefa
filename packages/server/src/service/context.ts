/** What every service operation is bound to: the project, the interpreter and the user. */
import type { Project } from './projects.js';

export interface RequestContext {
  project: Project;
  /** The interpreter serving the request. */
  python: string;
  /** Attribution for records this request creates (`created_by`). */
  user: string;
  /** Forwarded by another gateway to this one as the instance's owner (docs/operating/several-gateways.md): never forwarded again. */
  forwarded?: boolean;
}
