// Copy buttons that work on any origin. navigator.clipboard exists only in a secure context
// (https, or localhost): a club serving the app over plain http on 192.168.x.y has none, and a button
// relying on it did nothing. Here the text is copied with the Clipboard API when there is
// one, else selected (a readonly field, or the element's text) and copied with
// document.execCommand('copy'); when even that fails the text is left selected and the
// status says to press Ctrl+C / ⌘C. Either way a status next to the button says what
// happened (data-copied: "clipboard" | "command" | "selected").

import { el } from './api.js';

function select(source) {
  if ('select' in source) {  // an input or a textarea
    source.focus();
    source.select();
    source.setSelectionRange(0, source.value.length);
    return;
  }
  const range = document.createRange();
  range.selectNodeContents(source);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
}

export async function copyText(source, status) {
  const text = 'value' in source ? source.value : source.textContent;
  let how = null;
  if (navigator.clipboard && navigator.clipboard.writeText) {
    try { await navigator.clipboard.writeText(text); how = 'clipboard'; } catch (_) { how = null; }
  }
  select(source);  // shown selected either way: the reader sees what was copied
  if (!how) {
    try { if (document.execCommand('copy')) how = 'command'; } catch (_) { how = null; }
  }
  const mac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
  status.textContent = how ? 'Copied.' : `Selected: press ${mac ? '⌘C' : 'Ctrl+C'} to copy it.`;
  status.dataset.copied = how || 'selected';
  status.className = 'copy-status ' + (how ? 'ok' : 'manual');
  status.hidden = false;
  clearTimeout(status.fade);
  if (how) status.fade = setTimeout(() => { status.hidden = true; }, 4000);
  return how;
}

// Every <button data-copy="ID"> under ROOT copies the element ID's text (or value); its
// status (role=status, announced) is made next to it.
export function wireCopyButtons(root = document) {
  for (const button of root.querySelectorAll('button[data-copy]')) {
    if (button.dataset.wired) continue;
    button.dataset.wired = 'true';
    const status = el('span', { class: 'copy-status', role: 'status', id: button.id ? button.id + '-status' : null });
    status.hidden = true;
    button.after(' ', status);
    button.addEventListener('click', () => copyText(document.getElementById(button.dataset.copy), status));
  }
}
