import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, normalizeSettings, SettingsStore, tokenFor } from './settings.js';

describe('tokenFor', () => {
  const settings = { gatewayUrl: 'http://127.0.0.1:8000', token: 'secret', project: '' };

  it('sends the token to the configured gateway, whatever the path', () => {
    expect(tokenFor('http://127.0.0.1:8000', settings)).toBe('secret');
    expect(tokenFor('http://127.0.0.1:8000/prefix/', settings)).toBe('secret');
  });

  it('never to another origin a notebook output names', () => {
    expect(tokenFor('http://evil.example:8000', settings)).toBeUndefined();
    expect(tokenFor('http://127.0.0.1:8001', settings)).toBeUndefined();
    expect(tokenFor('https://127.0.0.1:8000', settings)).toBeUndefined();
    expect(tokenFor('http://localhost:8000', settings)).toBeUndefined();
    expect(tokenFor('not a url', settings)).toBeUndefined();
  });

  it('no token configured: none sent', () => {
    expect(tokenFor('http://127.0.0.1:8000', { ...settings, token: '' })).toBeUndefined();
  });
});

describe('SettingsStore', () => {
  it('normalizes: trims, drops a trailing slash, falls back to the defaults', () => {
    expect(normalizeSettings({ gatewayUrl: ' http://gw:1/ ', token: ' t ', project: 3 })).toEqual({ gatewayUrl: 'http://gw:1', token: 't', project: '' });
    expect(normalizeSettings({})).toEqual(DEFAULT_SETTINGS);
  });

  it('ready() waits for the registry, and emits changes only when something changed', async () => {
    const store = new SettingsStore();
    const seen: string[] = [];
    store.changed.connect((_, settings) => seen.push(settings.gatewayUrl));
    const ready = store.ready(10_000);
    store.update({ gatewayUrl: 'http://gw:1' });
    expect((await ready).gatewayUrl).toBe('http://gw:1');
    store.update({ gatewayUrl: 'http://gw:1' });
    store.update({ gatewayUrl: 'http://gw:2' });
    expect(seen).toEqual(['http://gw:1', 'http://gw:2']);
  });

  it('ready() gives the defaults when the registry never answers', async () => {
    expect(await new SettingsStore().ready(5)).toEqual(DEFAULT_SETTINGS);
  });
});
