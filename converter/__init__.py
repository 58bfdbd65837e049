"""The TPU converter product (seed 003, `mlconv-convert`): options, placement of TPU
functions, the host part, the saved artifact, the request batcher, sharding, the SavedModel
writer, serving and calibration."""
