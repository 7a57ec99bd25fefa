/**
 * A run that waits for a file: its interface prints, then waits until the file its config names
 * appears in the project, so a test decides when a run ends and nothing depends on timing.
 */
export const WAITER = {
  'waiter.py': [
    'import os, time',
    'from portico import Interface',
    '',
    'class Waiter(Interface):',
    '    """Prints, then waits until the file named by its config appears in the project."""',
    '    class Config:',
    '        name: str = "go"',
    '    def __call__(self):',
    '        print(f"waiting for {self.config.name}", flush=True)',
    '        while not os.path.exists(os.path.join(os.getcwd(), self.config.name)):',
    '            time.sleep(0.05)',
    '        print("done", flush=True)',
    '',
  ].join('\n'),
};
