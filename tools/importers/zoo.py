"""The real models the importers are checked and benchmarked on: torchvision's, and others
built or written in plain PyTorch in tests/importers/models.py. Per model: its source for
tools/import-torch, the per-sample input the tests use (small, for speed) and the one the
speed benchmark uses (torchvision's 224x224), the input dtype and id range, the batch and
the input's batch axis (0 unless given), the builder's keyword arguments, and those that
switch dropout off for numeric comparisons; no_onnx says why a model is not checked
through tools/import-onnx."""

import os

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS_PY = os.path.join(TOP, "tests", "importers", "models.py")

IMAGE = (3, 224, 224)
# Training the image models on synthetic data: a batch large enough for batch norm and
# a learning rate it survives (at 0.01 with momentum their losses rise; vgg11 diverges).
IMAGE_TRAINING = ["--batch", "32", "--lr", "0.001"]

ONNX_EXPORT = "tools/import-onnx does not take torch.onnx's export of it"
SAME_PADDING = "torch.onnx does not export padding='same'"

MODELS = {
    "resnet18": dict(source="torchvision:resnet18", input=(3, 64, 64), bench_input=IMAGE,
                     batch=4, kwargs={"num_classes": 10}, training=IMAGE_TRAINING),
    "googlenet": dict(source="torchvision:googlenet", input=(3, 64, 64), bench_input=IMAGE,
                      batch=4, kwargs={"num_classes": 10},
                      dropout={"dropout": 0.0, "dropout_aux": 0.0, "init_weights": True},
                      gradient_source=MODELS_PY + ":googlenet_average_pools",
                      settle_batch_norm=True, training=IMAGE_TRAINING),
    "mobilenet_v2": dict(source="torchvision:mobilenet_v2", input=(3, 64, 64),
                         bench_input=IMAGE, batch=4, kwargs={"num_classes": 10},
                         dropout={"dropout": 0.0}, training=IMAGE_TRAINING),
    "mobilenet_v3_small": dict(source="torchvision:mobilenet_v3_small", input=(3, 64, 64),
                               bench_input=IMAGE, batch=4, kwargs={"num_classes": 10},
                               dropout={"dropout": 0.0}, training=IMAGE_TRAINING),
    # vgg's adaptive pooling exports to ONNX only where it divides evenly: a 7x7 map.
    # Its 129 M parameters, their gradients and momentum (1.5 GB) do not fit paced-4's
    # 1 GiB devices: its main job runs on local-2.
    "vgg11": dict(source="torchvision:vgg11", input=(3, 32, 32), bench_input=IMAGE, batch=2,
                  kwargs={"num_classes": 10}, dropout={"dropout": 0.0},
                  onnx_input=IMAGE, onnx_batch=1, training=["--lr", "0.001"],
                  job_cluster="local-2"),
    "transformer": dict(source=MODELS_PY + ":transformer_classifier", input=(16,),
                        bench_input=(128,), dtype="i32", vocab=100, batch=8, kwargs={},
                        bench_kwargs={"dim": 256, "heads": 8, "ff": 1024},
                        dropout={"dropout": 0.0}),
    "gpt": dict(source=MODELS_PY + ":gpt", input=(16,), bench_input=(128,), dtype="i32",
                vocab=64, batch=8, kwargs={},
                bench_kwargs={"dim": 256, "heads": 8, "context": 128, "blocks": 2}),
    # torch.onnx exports no stochastic depth in training mode (bernoulli): onnx_no_dropout.
    "convnext": dict(source=MODELS_PY + ":convnext", input=(3, 32, 32), bench_input=IMAGE,
                     batch=4, kwargs={"num_classes": 10},
                     dropout={"stochastic_depth_prob": 0.0}, onnx_no_dropout=True,
                     training=IMAGE_TRAINING),
    "efficientnet_b0": dict(source=MODELS_PY + ":efficientnet_b0", input=(3, 32, 32),
                            bench_input=IMAGE, batch=4, kwargs={"num_classes": 10},
                            dropout={"dropout": 0.0, "stochastic_depth_prob": 0.0},
                            onnx_no_dropout=True, training=IMAGE_TRAINING),
    # Written as most GPTs and ViTs are: torch.fx's symbolic trace cannot follow them (the
    # importer traces them with real shapes).
    "nanogpt": dict(source=MODELS_PY + ":nanogpt", input=(16,), bench_input=(128,),
                    dtype="i32", vocab=64, batch=8, kwargs={},
                    bench_kwargs={"dim": 256, "heads": 8, "context": 128, "blocks": 2},
                    dropout={"dropout": 0.0}, no_onnx=ONNX_EXPORT),
    "vit": dict(source=MODELS_PY + ":vision_transformer", input=(3, 32, 32),
                bench_input=IMAGE, batch=4, kwargs={},
                bench_kwargs={"image_size": 224, "patch_size": 16, "num_heads": 8,
                              "hidden_dim": 256, "mlp_dim": 1024},
                dropout={"dropout": 0.0}, no_onnx=ONNX_EXPORT),
    "functional": dict(source=MODELS_PY + ":functional_cnn", input=(3, 32, 32),
                       bench_input=IMAGE, batch=4, kwargs={}, dropout={"dropout": 0.0},
                       training=IMAGE_TRAINING, no_onnx=SAME_PADDING),
    # Its channel shuffle unpacks sizes too: traced with real shapes.
    "shufflenet": dict(source="torchvision:shufflenet_v2_x0_5", input=(3, 64, 64),
                       bench_input=IMAGE, batch=4, kwargs={"num_classes": 10},
                       training=IMAGE_TRAINING),
    "unet": dict(source=MODELS_PY + ":unet", input=(3, 16, 16), bench_input=(3, 128, 128),
                 batch=4, kwargs={}, bench_kwargs={"width": 32}),
    "cnn1d": dict(source=MODELS_PY + ":cnn1d", input=(4, 32), bench_input=(4, 1024), batch=8,
                  kwargs={}, bench_kwargs={"width": 64, "length": 1024}),
    # PyTorch's default layout, tokens [T, batch]: the batch on axis 1.
    "seq_first_transformer": dict(source=MODELS_PY + ":sequence_first_transformer",
                                  input=(16,), bench_input=(128,), dtype="i32", vocab=100,
                                  batch=8, batch_axis=1, kwargs={},
                                  bench_kwargs={"dim": 256, "heads": 8, "ff": 1024,
                                                "context": 128},
                                  dropout={"dropout": 0.0}),
    "lstm": dict(source=MODELS_PY + ":lstm_classifier", input=(12,), bench_input=(64,),
                 dtype="i32", vocab=50, batch=8, kwargs={},
                 bench_kwargs={"dim": 128, "hidden": 256}, dropout={"dropout": 0.0}),
    "gru": dict(source=MODELS_PY + ":gru_lm", input=(12,), bench_input=(64,), dtype="i32",
                vocab=48, batch=8, kwargs={}, bench_kwargs={"dim": 128, "hidden": 256},
                dropout={"dropout": 0.0}),
    "llama": dict(source=MODELS_PY + ":llama", input=(16,), bench_input=(128,), dtype="i32",
                  vocab=64, batch=8, kwargs={},
                  bench_kwargs={"dim": 256, "heads": 8, "hidden": 688, "context": 128}),
    # Shifted windows: the batch merged with the window grid, a mask per window.
    "swin": dict(source=MODELS_PY + ":swin", input=(3, 32, 32), bench_input=IMAGE, batch=4,
                 kwargs={"num_classes": 10}, dropout={"stochastic_depth_prob": 0.0},
                 onnx_no_dropout=True, training=IMAGE_TRAINING),
}

# Small models that each check a group of operator mappings, not benchmarked: check.py takes
# them by name (tests/importers.sh runs each on every call).
MAPPING_MODELS = {
    "masks": dict(source=MODELS_PY + ":masks", input=(8,), batch=4, kwargs={}),
    "windows": dict(source=MODELS_PY + ":windows", input=(4, 5, 5), batch=4, kwargs={},
                    no_onnx="torch.onnx writes its einsums as Einsum, which import-onnx "
                            "does not map"),
    "volumes": dict(source=MODELS_PY + ":volumes", input=(2, 3, 6, 6), batch=4, kwargs={}),
    "everyday": dict(source=MODELS_PY + ":everyday", input=(3, 8, 8), batch=4, kwargs={},
                     no_onnx="import-onnx maps neither LeakyRelu nor Resize"),
    "powers": dict(source=MODELS_PY + ":powers", input=(8,), batch=4, kwargs={}),
    "normalizing": dict(source=MODELS_PY + ":normalizing", input=(8,), batch=4, kwargs={},
                        no_onnx="torch.onnx exports no zero_, and F.normalize, F.softplus "
                                "and var as ReduceL2, Softplus and ReduceProd, which "
                                "import-onnx does not map"),
    "pools": dict(source=MODELS_PY + ":pools", input=(2, 4, 8, 8), batch=4, kwargs={}),
    "strides": dict(source=MODELS_PY + ":strides", input=(6, 4, 3), batch=4, kwargs={}),
    "handwritten": dict(source=MODELS_PY + ":handwritten", input=(5, 6), batch=4, kwargs={},
                        no_onnx="import-onnx maps neither ReduceMax nor Max"),
    "handwritten_image": dict(source=MODELS_PY + ":handwritten_image", input=(3, 8, 8), batch=4,
                              kwargs={}, dropout={"dropout": 0.0},
                              no_onnx="import-onnx maps no GroupNorm, PRelu or DepthToSpace"),
    "handwritten_text": dict(source=MODELS_PY + ":handwritten_text", input=(7,), dtype="i32",
                             vocab=20, batch=4, kwargs={},
                             no_onnx="torch.onnx writes EmbeddingBag as Loop, ReduceProd and "
                                     "Tile, which import-onnx does not map"),
    "handwritten_translator": dict(source=MODELS_PY + ":handwritten_translator", input=(6, 8),
                                   batch=4, batch_axis=1, kwargs={}, dropout={"dropout": 0.0},
                                   no_onnx="import-onnx maps self-attention alone"),
}


def spec_of(name):
    return MODELS[name] if name in MODELS else MAPPING_MODELS[name]


def whole_shape(spec, batch, shape):
    """A batch of the model's inputs: the per-sample shape with the batch on its axis."""
    axis = spec.get("batch_axis", 0)
    return tuple(shape[:axis]) + (batch,) + tuple(shape[axis:])


def source(name, gradients=False):
    """Where the model comes from; for the gradient comparison, a variant where it has one
    (gradient_source: GoogLeNet with average pooling, see tests/importers/models.py)."""
    spec = spec_of(name)
    return spec.get("gradient_source", spec["source"]) if gradients else spec["source"]


def builder_kwargs(name, bench, numeric):
    """The builder's keyword arguments: the benchmark's sizes, dropout off for numerics."""
    spec = spec_of(name)
    kwargs = dict(spec["kwargs"])
    if bench:
        kwargs.update(spec.get("bench_kwargs", {}))
    if numeric:
        kwargs.update(spec.get("dropout", {}))
    return kwargs


def build(name, bench=False, numeric=False, gradients=False):
    """The PyTorch module, seeded as tools/import-torch seeds it."""
    import torch
    kwargs = builder_kwargs(name, bench, numeric)
    torch.manual_seed(0)
    kind, _, attr = source(name, gradients).rpartition(":")
    if kind == "torchvision":
        import warnings
        import torchvision
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getattr(torchvision.models, attr)(weights=None, **kwargs)
    import importlib.util
    loader = importlib.util.spec_from_file_location("placer_test_models", kind)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return getattr(module, attr)(**kwargs)


def import_command(name, output, batch, bench=False, numeric=False, weights=None,
                   gradients=False):
    """The tools/import-torch command line for the model."""
    spec = spec_of(name)
    kwargs = builder_kwargs(name, bench, numeric)
    shape = spec["bench_input"] if bench else spec["input"]
    cmd = [os.path.join(TOP, "tools", "import-torch"), source(name, gradients),
           "--input", ",".join(map(str, shape)), "--input-dtype", spec.get("dtype", "f32"),
           "--batch", str(batch), "-o", output]
    if spec.get("batch_axis"):
        cmd += ["--batch-axis", str(spec["batch_axis"])]
    if weights:
        cmd += ["--weights", weights]
    if "vocab" in spec:
        cmd += ["--vocab", str(spec["vocab"])]
    for k, v in kwargs.items():
        cmd += ["--arg", "%s=%r" % (k, v)]
    return cmd
