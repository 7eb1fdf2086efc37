// The one DOM builder of the dashboard. Every value from the coordinator goes in as text or an
// attribute, never as HTML.

/** An attribute's value: null, undefined and false leave it out, true sets it empty. */
export type AttrValue = string | number | boolean | null | undefined;
export type Attrs = Record<string, AttrValue>;
/** A child: a node, text (numbers too), nothing, or an array of children nested to any depth. */
export type Child = Node | string | number | null | undefined | false | readonly Child[];

/** Builds an element: attributes (`class`, `data-*`, others) and children. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = String(value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node: Node & ParentNode, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** The element with this id, which index.html has: a missing one is a broken page, said at once. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page has no #${id}`);
  return node as T;
}
