// The one DOM builder of the dashboard. Every value from the coordinator goes in as text or an
// attribute, never as HTML.

/** Builds an element: attributes (`class`, `data-*`, others) and children (nodes or text, in arrays nested to any depth). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
