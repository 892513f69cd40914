"""Graph neural networks from a library nobody here wrote: PyTorch Geometric (the GPU machine has torch-geometric
2.8; `pip install torch_geometric`), random weights on a random graph, under torch.compile (default mode), bf16
autocast, a node-classification training step: forward, cross-entropy over the nodes, backward (no optimizer).

What it adds to the dense models here: message passing. Each layer gathers its neighbours' features by edge index
and sums (or, for attention, soft-maxes and sums) them into the target nodes, which Inductor writes as gathers and
`tl.atomic_add` scatters; their backward swaps the two. Atomics make the outputs differ run to run (the output
check's "within spread"), and where the work lands depends on the edge indices (kept whole: 2 x 1,000,000 int64
is 16 MB, under the snapshot budget). Two models on one graph of 100,000 nodes, 1,000,000 edges and 128 features:

- `sage`: GraphSAGE, 3 layers of 256, mean aggregation;
- `gat`: GAT, 2 layers of 4 heads of 64, attention soft-maxed over each node's incoming edges.

    python benchmarks/workloads/pyg_gnn_compiled.py [STEPS [sage,gat]]   # default 10 steps, both models
"""

import sys

import torch
import torch_geometric
from torch_geometric.nn import GAT, GraphSAGE

from training import run, train_step

NODES, EDGES, FEATURES, CLASSES = 100_000, 1_000_000, 128, 40
MODELS = {"sage": lambda: GraphSAGE(FEATURES, 256, num_layers=3, out_channels=CLASSES),
          "gat": lambda: GAT(FEATURES, 64, num_layers=2, out_channels=CLASSES, heads=4)}


def build(names=tuple(MODELS), device="cuda", compile=True, nodes=NODES, edges=EDGES):
    """[(model, its compiled, features, edge index, labels)] per model of `names`, on one random graph, seeded."""
    torch.manual_seed(0)
    features = torch.randn(nodes, FEATURES, device=device)
    edge_index = torch.randint(0, nodes, (2, edges), device=device)
    labels = torch.randint(0, CLASSES, (nodes,), device=device)
    built = []
    for name in names:
        model = MODELS[name]().to(device).train()
        built.append((model, torch.compile(model) if compile else model, features, edge_index, labels))
    return built


def step(built) -> list:
    """One training step of each model; their losses."""
    return [train_step(model, x.device.type,
                       lambda: torch.nn.functional.cross_entropy(compiled(x, edge_index).float(), labels))
            for model, compiled, x, edge_index, labels in built]


def main():
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else tuple(MODELS)
    if not set(names) <= set(MODELS):
        raise SystemExit(f"models {sys.argv[2]}: each one of {', '.join(MODELS)}")
    steps, losses = run(lambda: [build(names)], step)
    print(f"torch_geometric {torch_geometric.__version__} ({NODES:,} nodes, {EDGES:,} edges): {steps} steps; losses "
          + ", ".join(f"{name} {loss.item():.4f}" for name, loss in zip(names, losses)))


if __name__ == "__main__":
    main()
