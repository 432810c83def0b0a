"""The benchmark catalog: models served at an endpoint, their datasets, tokenizers and rule-set versions."""
