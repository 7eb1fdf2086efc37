// The objects that keep the sign-in codes of every account, one per shard (the first hex digit of a
// code's SHA-256, rules/sign-in-codes.ts): the sign-in page has only the code to go on, so a code
// lives where its hash alone finds it, and guesses spread over sixteen objects, not one. A token's
// codes are all drawn into one shard, so each object keeps the per-token bound whole. Each call
// is one event: read its snapshot at the object's time, ask the pure plan (rules/sign-in-codes.ts),
// apply it, answer. No await between read and write, so two approvals racing for one code spend it once.
import type { Env } from "../env.ts";
import { planSignInCodes, type CodeAnswer, type CodeEvent } from "../rules/sign-in-codes.ts";
import { ClockedObject } from "./clock.ts";
import { SignInCodeStore } from "./sign-in-code-store.ts";

export class SignInCodes extends ClockedObject {
  private readonly store: SignInCodeStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new SignInCodeStore(ctx.storage.sql);
  }

  private run(event: CodeEvent): CodeAnswer {
    const plan = planSignInCodes(event, this.store.snapshot(event, this.now()));
    this.store.apply(plan);
    return plan.answer;
  }

  /** A new code (by its hash) for the token with SHA-256 `signer`. */
  async mint(hash: string, signer: string): Promise<CodeAnswer> {
    return this.run({ type: "mint", hash, signer });
  }

  async find(hash: string): Promise<CodeAnswer> {
    return this.run({ type: "find", hash });
  }

  async spend(hash: string): Promise<CodeAnswer> {
    return this.run({ type: "spend", hash });
  }
}

/** The object that keeps the sign-in codes of one shard (rules/sign-in-codes.ts codeShard). */
export function signInCodesShard(env: Env, shard: string): DurableObjectStub<SignInCodes> {
  return env.SIGN_IN_CODES.get(env.SIGN_IN_CODES.idFromName(`sign-in-codes-${shard}`));
}
