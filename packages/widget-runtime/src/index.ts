/**
 * @portico/widget-runtime: an anywidget-compatible host for Portico interface widgets in any web
 * page. `mount()` renders an interface's widget into an element; `defineElement()` registers
 * `<portico-widget>` (the browser bundle does it for you); `connect()` opens an interface without
 * a widget. Both handles offer `call`, `upload` and `read`; `renderDisplay()` shows a rich result
 * (a `Display`: a figure, an image, a table) in an element. Nothing here imports JupyterLab; the
 * lab extension is one more caller of `mount()`.
 */
export { mount, type MountOptions, type WidgetHandle, type WidgetHandleEvents } from './dom/mount.js';
export { connect, type Connection, type ConnectionEvents } from './connect.js';
export type { CallOptions, InterfaceCalls, ReadOptions, UploadData, UploadOptions } from './net/transfers.js';
export { Display, renderDisplay, type Displayable } from './display.js';
export type { ConnectOptions } from './net/session.js';
export { defineElement, type DefineElementOptions, type PorticoWidgetElement } from './dom/element.js';
export { WidgetRuntimeError, RUNTIME_ERROR_CODES, type RuntimeErrorCode } from './errors.js';
export type { PorticoModel } from './model/model.js';
export type { ConnectionStatus } from './net/session.js';
export type { InstanceRestart, InterfaceInfo, JsonObject, UploadResult, Version } from '@portico/protocol';
