"""Operations: health, metrics, logs, memory, the multi-process server and the operations API."""
