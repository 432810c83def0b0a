"""Preload the benchmark catalog. Tokenizers: the shipped sample BPE; only llama3_1-8b's is genuine
(the sample runs were counted with it), every other one is a placeholder the chair replaces in the admin."""

from django.db import migrations

SAMPLE_TOKENIZER = "sample-bpe-4k/tokenizer.json"

CATALOG = [
    # model_id, display_name, dataset, dataset_sample_count, workload, placeholder tokenizer
    ("llama3_1-8b", "Llama 3.1 8B Instruct", "CNN/DailyMail summarisation", 13368, "chat", False),
    ("llama3_1-405b", "Llama 3.1 405B Instruct", "MLPerf llama3.1-405b long-context mix", None, "chat", True),
    ("deepseek-r1", "DeepSeek-R1", "MLPerf deepseek-r1 reasoning mix", None, "reasoning", True),
    ("gpt-oss-120b", "gpt-oss-120b", "MLPerf gpt-oss-120b reasoning mix", None, "reasoning", True),
    ("qwen3-coder-480b", "Qwen3-Coder 480B-A35B", "Code generation prompts", None, "chat", True),
    ("deepseek-v4-pro", "DeepSeek V4 Pro", "Agentic coding sessions (multi-turn, tool calls)", None, "agentic_coding", True),
    ("kimi-k3", "Kimi K3", "Agentic coding sessions (multi-turn, tool calls)", None, "agentic_coding", True),
    ("qwen3.6", "Qwen3.6", "Agentic coding sessions (multi-turn, tool calls)", None, "agentic_coding", True),
]


def load_catalog(apps, schema_editor):
    Benchmark = apps.get_model("catalog", "Benchmark")
    for model_id, display_name, dataset, sample_count, workload, placeholder in CATALOG:
        Benchmark.objects.get_or_create(
            model_id=model_id,
            defaults={
                "display_name": display_name,
                "dataset": dataset,
                "dataset_sample_count": sample_count,
                "workload": workload,
                "tokenizer_path": SAMPLE_TOKENIZER,
                "tokenizer_is_placeholder": placeholder,
                "ruleset_version": "endpoints-v1.0",
            },
        )


def unload_catalog(apps, schema_editor):
    Benchmark = apps.get_model("catalog", "Benchmark")
    Benchmark.objects.filter(model_id__in=[row[0] for row in CATALOG]).delete()


class Migration(migrations.Migration):
    dependencies = [("catalog", "0001_initial")]

    operations = [migrations.RunPython(load_catalog, unload_catalog)]
