#!/usr/bin/env python3
"""Writes an ordinary training log of SIZE_MB megabytes (MiB) to OUT, for explain's throughput.

    scripts/bench/training_log.py OUT [SIZE_MB]

The lines are the shapes trainers print, every one different (step counters, losses, rates,
times): a launcher's logged step line with rank tag, Hugging Face Trainer's metrics dict, a tqdm
progress bar (block characters, so not plain ASCII) and checkpoint saves. Unlike a real log
repeated, nothing repeats, so explain's cache of repeated lines does not help: each line is read.
Seeded: the same file every run.
"""
import argparse
import sys
import random


def main() -> None:
    # argparse, so that "--help" prints this and is never taken for the file to write.
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_path", metavar="OUT")
    parser.add_argument("size", metavar="SIZE_MB", type=int, nargs="?", default=200)
    args = parser.parse_args()
    out_path, size = args.out_path, args.size
    rnd = random.Random(1)
    step = 0
    with open(out_path, "w", encoding="utf-8") as out:
        while out.tell() < size * 1024 * 1024:
            step += 1
            r = rnd.random()
            if r < 0.6:
                out.write(
                    f"[2026-12-04 10:{step // 60 % 60:02d}:{step % 60:02d},{rnd.randint(0, 999):03d}] "
                    f"[INFO] [rank{step % 8}] step {step} | loss {rnd.uniform(1, 3):.4f} | "
                    f"lr {rnd.uniform(1e-5, 3e-4):.3e} | grad_norm {rnd.uniform(0.1, 2):.3f} | "
                    f"tokens/s {rnd.randint(10000, 90000)} | mem {rnd.uniform(30, 70):.1f}GB\n"
                )
            elif r < 0.8:
                out.write(
                    f"{{'loss': {rnd.uniform(1, 3):.4f}, 'grad_norm': {rnd.uniform(0.1, 2):.4f}, "
                    f"'learning_rate': {rnd.uniform(1e-5, 3e-4):.6e}, 'epoch': {step / 1000:.2f}}}\n"
                )
            elif r < 0.95:
                out.write(
                    f" {rnd.randint(1, 99)}%|██████▍   | {step}/{step * 3} "
                    f"[{step // 60:02d}:{step % 60:02d}<00:{rnd.randint(10, 59)}, {rnd.uniform(1, 9):.2f}it/s]\n"
                )
            else:
                out.write(
                    f"Saving checkpoint to /checkpoints/run-{step % 7}/step-{step}/model.safetensors "
                    f"({rnd.randint(1, 9)} shards)\n"
                )
    print(f"{out_path}: {size} MB of training-log lines", file=sys.stderr)


if __name__ == "__main__":
    main()
