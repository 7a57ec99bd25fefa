/** zod, extended once with `.openapi()` so that every schema can name itself in /openapi.json. */
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

extendZodWithOpenApi(z);

export { z };
