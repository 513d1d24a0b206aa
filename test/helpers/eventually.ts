/** Polls `check` every 100 ms until it holds (or `ms` pass, and its last failure is thrown). */
export async function eventually<T>(check: () => Promise<T>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
