/** @portico/server public API: start a gateway in-process, and the types around it. */
export { startServer, type RunningServer } from './server.js';
export { defaultOptions, type GatewayOptions } from './config/options.js';
export { LIMITS, VERSION, API_VERSION, PROTOCOL_VERSION } from './config/constants.js';
export { PorticoError, ERROR_CODES, type ErrorCode, type ErrorDetail, type Issue } from './errors.js';
export type { InterfaceRecord } from './store/store.js';
