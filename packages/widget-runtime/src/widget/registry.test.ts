import { describe, expect, it } from 'vitest';
import { WidgetModel } from '../model/model.js';
import { WidgetRegistry, refToUuid } from './registry.js';

function model(registry: WidgetRegistry, uuid: string) {
  return new WidgetModel(uuid, { outbox: { send: () => undefined }, widgetManager: registry.widgetManager });
}

describe('WidgetRegistry: widget_manager.get_model and host', () => {
  it('get_model resolves a hosted model by uuid, anywidget: ref or IPY_MODEL_ ref', async () => {
    const registry = new WidgetRegistry(50);
    const m = model(registry, 'abc');
    registry.addModel(m);
    await expect(registry.widgetManager.get_model('abc')).resolves.toBe(m);
    await expect(registry.host.getModel('anywidget:abc')).resolves.toBe(m);
    expect(refToUuid('IPY_MODEL_abc')).toBe('abc');
  });

  it('get_model waits for a model that is mounted later', async () => {
    const registry = new WidgetRegistry(1000);
    const pending = registry.widgetManager.get_model('late');
    const m = model(registry, 'late');
    registry.addModel(m);
    await expect(pending).resolves.toBe(m);
  });

  it('get_model of a uuid never mounted rejects with timeout', async () => {
    const registry = new WidgetRegistry(10);
    await expect(registry.widgetManager.get_model('missing')).rejects.toMatchObject({ code: 'timeout' });
  });

  it('an unregistered model is no longer found', async () => {
    const registry = new WidgetRegistry(10);
    const unregister = registry.addModel(model(registry, 'gone'));
    unregister();
    await expect(registry.widgetManager.get_model('gone')).rejects.toMatchObject({ code: 'timeout' });
  });

  it('host.getWidget resolves the initialized widget', async () => {
    const registry = new WidgetRegistry(50);
    const widget = { exports: { x: 1 }, render: async () => undefined };
    registry.addWidget('w', widget);
    await expect(registry.host.getWidget('anywidget:w')).resolves.toBe(widget);
  });
});
