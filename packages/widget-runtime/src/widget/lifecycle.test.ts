import type { AnyModel, RenderProps } from '@anywidget/types';
import { describe, expect, it, vi } from 'vitest';
import { WidgetModel } from '../model/model.js';
import { WidgetBinding, resolveWidget } from './lifecycle.js';
import { WidgetRegistry } from './registry.js';

/** Just enough of an HTMLElement for the binding: it only empties elements on reload. */
function fakeEl(name: string): HTMLElement {
  const el = { name, children: [] as unknown[], replaceChildren: () => (el.children = []) };
  return el as unknown as HTMLElement;
}

function setup() {
  const registry = new WidgetRegistry(50);
  const model = new WidgetModel('u1', { outbox: { send: () => 1 }, widgetManager: registry.widgetManager });
  model.resync({ count: 0 });
  const log: string[] = [];
  const binding = new WidgetBinding({
    model,
    host: registry.host,
    experimental: { invoke: () => Promise.reject(new Error('unused')) },
    onViewError: (error, el) => log.push(`view-error ${(el as unknown as { name: string }).name}: ${error.message}`),
  });
  return { model, binding, log };
}

/** A widget module that records its lifecycle in `log`. */
function recordingWidget(log: string[], tag = 'v1') {
  return {
    initialize({ model, signal }: { model: AnyModel; signal: AbortSignal }) {
      log.push(`${tag} initialize`);
      model.on('change:count', () => log.push(`${tag} init saw ${model.get('count')}`));
      signal.addEventListener('abort', () => log.push(`${tag} init aborted`));
      return () => log.push(`${tag} init cleanup`);
    },
    render({ model, el, signal }: RenderProps) {
      const name = (el as unknown as { name: string }).name;
      log.push(`${tag} render ${name}`);
      model.on('change:count', () => log.push(`${tag} ${name} saw ${model.get('count')}`));
      signal.addEventListener('abort', () => log.push(`${tag} ${name} aborted`));
      return async () => {
        log.push(`${tag} ${name} cleanup`);
      };
    },
  };
}

describe('resolveWidget: what a module may export', () => {
  it('a default object', async () => {
    const render = () => undefined;
    expect(await resolveWidget({ default: { render } })).toEqual({ initialize: undefined, render });
  });

  it('a default factory, sync or async, called once per resolve', async () => {
    const render = () => undefined;
    const factory = vi.fn(async () => ({ render }));
    expect((await resolveWidget({ default: factory })).render).toBe(render);
    expect((await resolveWidget({ default: () => ({ render }) })).render).toBe(render);
    expect(factory).toHaveBeenCalledOnce();
  });

  it('a named render export, with a deprecation warning', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const render = () => undefined;
    expect((await resolveWidget({ render })).render).toBe(render);
    expect(warn).toHaveBeenCalledOnce();
    warn.mockRestore();
  });

  it('anything else is invalid_module', async () => {
    await expect(resolveWidget({})).rejects.toMatchObject({ code: 'invalid_module' });
    await expect(resolveWidget({ default: 42 })).rejects.toMatchObject({ code: 'invalid_module' });
    await expect(resolveWidget({ default: { render: 'no' } })).rejects.toMatchObject({ code: 'invalid_module' });
  });

  it('a factory that throws is render_failed', async () => {
    await expect(resolveWidget({ default: () => { throw new Error('x'); } })).rejects.toMatchObject({ code: 'render_failed' });
  });
});

describe('WidgetBinding: lifecycle', () => {
  it('initialize runs once per model, render once per view, with the props anywidget passes', async () => {
    const { binding, log, model } = setup();
    const seen: Array<Record<string, unknown>> = [];
    await binding.start({
      default: {
        initialize: (props: object) => void seen.push({ ...props }),
        render: (props: object) => void seen.push({ ...props }),
      },
    });
    const a = fakeEl('a');
    await binding.render(a);
    await binding.render(fakeEl('b'));
    expect(seen).toHaveLength(3);
    expect(Object.keys(seen[0]!).sort()).toEqual(['experimental', 'model', 'signal']);
    expect(Object.keys(seen[1]!).sort()).toEqual(['el', 'experimental', 'host', 'model', 'signal']);
    expect(seen[1]!.el).toBe(a);
    expect((seen[1]!.model as AnyModel).get('count')).toBe(0);
    expect((seen[1]!.model as { model_id: string }).model_id).toBe(model.model_id);
    expect(log).toEqual([]);
  });

  it('removing a view aborts its signal, drops its listeners and runs its cleanup', async () => {
    const { binding, model } = setup();
    const log: string[] = [];
    await binding.start({ default: recordingWidget(log) });
    const a = await binding.render(fakeEl('a'));
    await binding.render(fakeEl('b'));
    await binding.removeView(a);
    model.set('count', 1);
    expect(log).toEqual([
      'v1 initialize',
      'v1 render a',
      'v1 render b',
      'v1 a aborted',
      'v1 a cleanup',
      'v1 init saw 1',
      'v1 b saw 1',
    ]);
  });

  it('dispose runs view cleanups, then the initialize cleanup', async () => {
    const { binding, model } = setup();
    const log: string[] = [];
    await binding.start({ default: recordingWidget(log) });
    await binding.render(fakeEl('a'));
    log.length = 0;
    await binding.dispose();
    model.set('count', 2);
    expect(log).toEqual(['v1 a aborted', 'v1 a cleanup', 'v1 init aborted', 'v1 init cleanup']);
  });

  it('hot reload: cleanups, then the new initialize and render into the same emptied elements', async () => {
    const { binding, model } = setup();
    const log: string[] = [];
    await binding.start({ default: recordingWidget(log, 'v1') });
    const el = fakeEl('a');
    (el as unknown as { children: unknown[] }).children.push('old dom');
    await binding.render(el);
    log.length = 0;
    await binding.reload({ default: () => recordingWidget(log, 'v2') });
    expect(log).toEqual(['v1 a aborted', 'v1 a cleanup', 'v1 init aborted', 'v1 init cleanup', 'v2 initialize', 'v2 render a']);
    expect((el as unknown as { children: unknown[] }).children).toEqual([]);
    log.length = 0;
    model.set('count', 3);
    expect(log).toEqual(['v2 init saw 3', 'v2 a saw 3']);
  });

  it('a reload with a module that is not a widget keeps the old one running', async () => {
    const { binding, model } = setup();
    const log: string[] = [];
    await binding.start({ default: recordingWidget(log) });
    await binding.render(fakeEl('a'));
    await expect(binding.reload({ nothing: true })).rejects.toMatchObject({ code: 'invalid_module' });
    log.length = 0;
    model.set('count', 4);
    expect(log).toEqual(['v1 init saw 4', 'v1 a saw 4']);
  });

  it('a view whose new render throws after a reload is reported, the others still render', async () => {
    const { binding, log } = setup();
    await binding.start({ default: { render: () => undefined } });
    await binding.render(fakeEl('a'));
    await binding.render(fakeEl('b'));
    await binding.reload({
      default: {
        render: ({ el }: RenderProps) => {
          if ((el as unknown as { name: string }).name === 'a') throw new Error('bad a');
          log.push('rendered b');
        },
      },
    });
    expect(log).toEqual(['view-error a: render() threw: bad a', 'rendered b']);
  });

  it('a render that throws rejects with render_failed and leaves no view behind', async () => {
    const { binding } = setup();
    let renders = 0;
    await binding.start({ default: { render: () => { renders += 1; if (renders === 1) throw new Error('nope'); } } });
    await expect(binding.render(fakeEl('a'))).rejects.toMatchObject({ code: 'render_failed', message: 'render() threw: nope' });
    await binding.reload({ default: { render: () => void (renders += 10) } });
    expect(renders).toBe(1);
  });

  it('an initialize that throws rejects start with render_failed', async () => {
    const { binding } = setup();
    await expect(binding.start({ default: { initialize: () => { throw new Error('init'); } } })).rejects.toMatchObject({ code: 'render_failed' });
  });

  it('a cleanup that throws is logged and does not stop teardown', async () => {
    const { binding } = setup();
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const after = vi.fn();
    await binding.start({ default: { initialize: () => after, render: () => () => { throw new Error('cleanup'); } } });
    await binding.render(fakeEl('a'));
    await binding.dispose();
    expect(after).toHaveBeenCalledOnce();
    expect(error).toHaveBeenCalled();
    error.mockRestore();
  });

  it('the cleanup an async render resolves to runs when its view is removed', async () => {
    const { binding } = setup();
    const log: string[] = [];
    await binding.start({
      default: {
        async render({ signal }: RenderProps) {
          await new Promise((r) => setTimeout(r, 5));
          log.push(`rendered, aborted=${signal.aborted}`);
          return () => log.push('cleanup');
        },
      },
    });
    const view = await binding.render(fakeEl('a'));
    await binding.removeView(view);
    expect(log).toEqual(['rendered, aborted=false', 'cleanup']);
  });

  it('initialize may return exports instead of a cleanup (anywidget 0.11)', async () => {
    const { binding } = setup();
    await binding.start({ default: { initialize: () => ({ answer: 42 }) } });
    expect(binding.exports).toEqual({ answer: 42 });
  });
});
