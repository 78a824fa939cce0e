# accel preview-data: a causal_lm job's data read and tokenized as accel-worker reads it
# (core/worker/lmdata and the tokenizer, both torch-free).
list(APPEND ACCEL_CLI_SOURCES cli/cmd_preview_data.cpp)
list(APPEND ACCEL_CLI_LIBS accel_worker_lmdata accel_tokenizer accel_bigmodel)
