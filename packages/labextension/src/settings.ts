/**
 * The gateway settings (URL, token, project) shared by every part of the extension. The
 * settings plugin fills this one store from JupyterLab's settings registry; the MIME renderer
 * reads it too, which is why it is a module-level store rather than a plugin service: a MIME
 * extension cannot require services, and both entry points run in the same webpack container, so
 * they share this module instance.
 */
import { PromiseDelegate } from '@lumino/coreutils';
import { Signal, type ISignal } from '@lumino/signaling';

export interface GatewaySettings {
  /** Base URL of the gateway the sidebar talks to; the token is only ever sent to this origin. */
  gatewayUrl: string;
  /** Bearer token (the gateway's `--api-token`); empty for an open gateway. */
  token: string;
  /** Project directory to bind (`?project=`); empty means the gateway's default project. */
  project: string;
}

/** Defaults, equal to those in schema/settings.json and to `portico.client.Gateway`'s URL. */
export const DEFAULT_SETTINGS: Readonly<GatewaySettings> = Object.freeze({
  gatewayUrl: 'http://127.0.0.1:8000',
  token: '',
  project: '',
});

/** How long a widget waits for the settings registry before rendering with the defaults. */
export const SETTINGS_WAIT_MS = 5_000;

/** Picks the known keys of a settings object, trimmed, falling back to the defaults. */
export function normalizeSettings(raw: Partial<Record<keyof GatewaySettings, unknown>>): GatewaySettings {
  const text = (value: unknown, fallback: string) => (typeof value === 'string' ? value.trim() : fallback);
  return {
    gatewayUrl: text(raw.gatewayUrl, DEFAULT_SETTINGS.gatewayUrl).replace(/\/+$/, ''),
    token: text(raw.token, DEFAULT_SETTINGS.token),
    project: text(raw.project, DEFAULT_SETTINGS.project),
  };
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/**
 * The token to send to `url`: the configured token when `url` is on the configured gateway's
 * origin, otherwise none. A notebook output names its own gateway URL; this keeps a token from
 * being handed to whatever server an output names.
 */
export function tokenFor(url: string, settings: GatewaySettings): string | undefined {
  if (!settings.token) return undefined;
  const origin = originOf(url);
  return origin !== undefined && origin === originOf(settings.gatewayUrl) ? settings.token : undefined;
}

export class SettingsStore {
  private current_: GatewaySettings = { ...DEFAULT_SETTINGS };
  private readonly loaded = new PromiseDelegate<void>();
  private readonly changed_ = new Signal<this, GatewaySettings>(this);
  private isLoaded = false;

  /** Emits the new settings whenever they change. */
  get changed(): ISignal<this, GatewaySettings> {
    return this.changed_;
  }

  get current(): GatewaySettings {
    return this.current_;
  }

  /** Replaces the settings (from the registry); the first call also resolves `ready()`. */
  update(raw: Partial<Record<keyof GatewaySettings, unknown>>): void {
    const next = normalizeSettings(raw);
    const before = this.current_;
    this.current_ = next;
    if (!this.isLoaded) {
      this.isLoaded = true;
      this.loaded.resolve();
    }
    if (before.gatewayUrl !== next.gatewayUrl || before.token !== next.token || before.project !== next.project) {
      this.changed_.emit(next);
    }
  }

  /**
   * The settings once the registry has delivered them, or the defaults after `timeoutMs` (the
   * settings plugin may be disabled; a widget must still render).
   */
  async ready(timeoutMs = SETTINGS_WAIT_MS): Promise<GatewaySettings> {
    if (!this.isLoaded) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([this.loaded.promise, timeout]);
      clearTimeout(timer);
    }
    return this.current_;
  }
}

/** The one store of this page. */
export const settingsStore = new SettingsStore();
