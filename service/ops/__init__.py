"""Operations: health, metrics, logs and the operations API (serving them is ``service.server``)."""
