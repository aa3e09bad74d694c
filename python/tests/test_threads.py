"""Several Python threads call compiled functions at once (the GIL is released)."""
import threading

import numpy as np

import kiln


def test_concurrent_calls_and_first_compiles(rng):
    f = kiln.script("def f(x: Tensor, y: Tensor) -> Tensor:\n    return torch.tanh(x) * y + x\n")
    inputs = [(rng.standard_normal((n, 33)).astype(np.float32),
               rng.standard_normal((n, 33)).astype(np.float32)) for n in (1, 7, 64, 1023)]
    errors = []

    def work(k):
        try:
            for i in range(40):
                x, y = inputs[(k + i) % len(inputs)]
                np.testing.assert_allclose(f(x, y), np.tanh(x) * y + x, rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert f.num_compiled == len(inputs)


def test_gil_is_released_while_running():
    # A long kernel on one thread does not stop another Python thread.
    f = kiln.script("def f(x: Tensor) -> Tensor:\n    return (x * 1.0001).exp().sum()\n")
    big = np.ones(1 << 22, np.float32)
    f(big)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=ticker)
    t.start()
    for _ in range(5):
        f(big)
    stop.set()
    t.join()
    assert len(ticks) > 0
