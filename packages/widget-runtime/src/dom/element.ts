/**
 * `<portico-widget>`: mount() as a custom element.
 *
 *   <portico-widget url="https://gw.example.org" target="counter"></portico-widget>
 *
 * Attributes: `url` (defaults to the gateway that served the bundle), `token`, `target`, `uuid`,
 * `project`, `version` (a JSON array). The token may instead be set as the `token` property,
 * which keeps it out of the DOM. Changing an attribute remounts; removing the element unmounts
 * (moving it within one task does not). DOM events, bubbling and composed:
 * `portico-ready` (detail: the WidgetHandle), `portico-status` (detail: {status, error}),
 * `portico-event` (detail: the emit() payload, a Display for a figure), `portico-error` (detail: the error),
 * `portico-instance-restarted` (detail: `{uuid, reason, message}`: the instance died with its
 * Python worker; the widget's state is read again).
 * The element class is created on first definition, so importing this module needs no DOM.
 */
import { WidgetRuntimeError } from '../errors.js';
import type { Version } from '@portico/protocol';
import { mount, type MountOptions, type WidgetHandle } from './mount.js';
import { showNotice } from './notice.js';

export interface DefineElementOptions {
  /** Tag name (default `portico-widget`). */
  name?: string;
  /** Gateway URL used when the element has no `url` attribute. */
  defaultUrl?: string;
}

export interface PorticoWidgetElement extends HTMLElement {
  /** The mounted widget, once `portico-ready` fired. */
  readonly handle: WidgetHandle | undefined;
  /** Bearer token, not reflected to an attribute. */
  token: string | null;
}

const ATTRIBUTES = ['url', 'token', 'target', 'uuid', 'project', 'version'] as const;

/** Registers the element (once per name: a second call returns the existing class). */
export function defineElement(options: DefineElementOptions = {}): CustomElementConstructor {
  const name = options.name ?? 'portico-widget';
  const existing = customElements.get(name);
  if (existing) return existing;

  class Element extends HTMLElement implements PorticoWidgetElement {
    static observedAttributes = [...ATTRIBUTES];
    #handle: WidgetHandle | undefined;
    #token: string | null = null;
    #key: string | undefined;
    #scheduled = false;
    #queue: Promise<void> = Promise.resolve();

    get handle(): WidgetHandle | undefined {
      return this.#handle;
    }

    get token(): string | null {
      return this.#token ?? this.getAttribute('token');
    }

    set token(value: string | null) {
      this.#token = value;
      this.#schedule();
    }

    connectedCallback(): void {
      this.#schedule();
    }

    disconnectedCallback(): void {
      this.#schedule();
    }

    attributeChangedCallback(): void {
      this.#schedule();
    }

    /** Coalesces the callbacks of one task (parser, moves) into one sync, run after the previous one. */
    #schedule(): void {
      if (this.#scheduled) return;
      this.#scheduled = true;
      queueMicrotask(() => {
        this.#scheduled = false;
        this.#queue = this.#queue.then(() => this.#sync());
      });
    }

    async #sync(): Promise<void> {
      let wanted: MountOptions | undefined;
      let invalid: WidgetRuntimeError | undefined;
      try {
        wanted = this.isConnected ? this.#options() : undefined;
      } catch (error) {
        invalid = error as WidgetRuntimeError;
      }
      const key = invalid ? `invalid:${invalid.message}` : wanted && JSON.stringify(wanted);
      if (key === this.#key) return;
      this.#key = key;
      const previous = this.#handle;
      this.#handle = undefined;
      await previous?.unmount();
      if (invalid) {
        showNotice(this, invalid);
        this.#fire('portico-error', invalid);
        console.error(`[portico-widget] ${invalid.message}`);
        return;
      }
      if (!wanted) return;
      try {
        const handle = await mount(this, wanted);
        if (this.#key !== key) {
          await handle.unmount();
          return;
        }
        this.#handle = handle;
        handle.on('status', (status, error) => this.#fire('portico-status', { status, error }));
        handle.on('event', (payload) => this.#fire('portico-event', payload));
        handle.on('error', (error) => this.#fire('portico-error', error));
        handle.on('instance_restarted', (restart) => this.#fire('portico-instance-restarted', restart));
        this.#fire('portico-ready', handle);
      } catch (error) {
        this.#fire('portico-error', error);
      }
    }

    /** Options from the attributes; undefined while no target/uuid is set yet. */
    #options(): MountOptions | undefined {
      const attr = (n: string) => this.getAttribute(n) || undefined;
      const target = attr('target');
      const uuid = attr('uuid');
      if (!target && !uuid) return undefined;
      const url = attr('url') ?? options.defaultUrl;
      if (!url) throw new WidgetRuntimeError('invalid_argument', '<portico-widget> needs a url attribute');
      const version = attr('version');
      return {
        url,
        token: this.token || undefined,
        target,
        uuid,
        project: attr('project'),
        version: version === undefined ? undefined : parseVersion(version),
      };
    }

    #fire(type: string, detail: unknown): void {
      this.dispatchEvent(new CustomEvent(type, { detail, bubbles: true, composed: true }));
    }
  }

  customElements.define(name, Element);
  return Element;
}

function parseVersion(text: string): Version {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new WidgetRuntimeError('invalid_argument', `The version attribute is not JSON: ${text}`);
  }
  if (!Array.isArray(value)) throw new WidgetRuntimeError('invalid_argument', 'The version attribute must be a JSON array');
  return value as Version;
}
