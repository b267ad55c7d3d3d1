// The Kernels tab's export row, live only: a module name and the button that asks the kernel
// to compile the program ahead of time (ex.export, docs/export.md), then what it wrote.

import { button, el } from './dom';

export class ExportRow {
  readonly node: HTMLElement;
  private status = el('span', { class: 'xe-export-status' });
  private run: HTMLButtonElement;

  constructor(defaultName: string, exportModule: (name: string) => void) {
    const name = el('input', { class: 'xe-export-name', type: 'text', value: defaultName, title: 'the module\'s name' });
    this.run = button('Export', 'Compile ahead of time into a module that needs only NumPy (ex.export), in the kernel\'s working directory', () => {
      this.run.disabled = true;
      this.status.textContent = 'compiling ahead of time…';
      exportModule(name.value.trim() || defaultName);
    }, 'xe-btn xe-export-run');
    this.node = el('div', { class: 'xe-export-row' }, el('label', {}, 'module ', name), ' ', this.run, ' ', this.status);
  }

  /** What the kernel wrote (the module and its size), or why it could not. */
  setStatus(text: string): void {
    this.status.textContent = text;
    this.run.disabled = false;
  }
}
