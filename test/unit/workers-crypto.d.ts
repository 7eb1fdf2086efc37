// worker/auth.ts is unit-tested in Node; this declares the Workers-only method it calls.
interface SubtleCrypto {
  timingSafeEqual(a: ArrayBuffer | ArrayBufferView, b: ArrayBuffer | ArrayBufferView): boolean;
}
