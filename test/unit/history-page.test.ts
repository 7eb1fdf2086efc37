// How far one page of history goes (rules/history-page.ts): the count and the byte budget each end
// it, whichever comes first, and a page is never empty while a message is left.
import { describe, expect, it } from "vitest";
import { pageLength } from "../../worker/rules/history-page.ts";

describe("pageLength", () => {
  const rows: [string, number[], number, number, number][] = [
    ["the count ends a page of small messages", [10, 10, 10, 10], 3, 1000, 3],
    ["the budget ends a page of large ones", [400, 400, 400], 10, 1000, 2],
    ["a message that reaches the budget exactly fits", [500, 500, 1], 10, 1000, 2],
    ["one message over the budget still comes, alone", [5000, 1], 10, 1000, 1],
    ["nothing left: an empty page", [], 10, 1000, 0],
    ["a small one after a large one that did not fit does not jump the queue", [600, 600, 1], 10, 1000, 1],
  ];
  it.each(rows)("%s", (_name, sizes, count, budget, taken) => expect(pageLength(sizes, count, budget)).toBe(taken));
});
