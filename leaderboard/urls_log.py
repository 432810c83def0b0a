"""The public transparency log (mounted at /log/): checkpoints, keys, leaves and proofs (docs/evidence.md)."""

from django.urls import path

from leaderboard.views import evidence as views

app_name = "log"

urlpatterns = [
    path("checkpoint", views.log_checkpoint, name="checkpoint"),
    path("checkpoints/<int:size>", views.log_checkpoint_at, name="checkpoint_at"),
    path("keys", views.log_keys, name="keys"),
    path("leaves/<int:index>", views.log_leaf, name="leaf"),
    path("proof/inclusion", views.log_proof_inclusion, name="proof_inclusion"),
    path("proof/consistency", views.log_proof_consistency, name="proof_consistency"),
]
