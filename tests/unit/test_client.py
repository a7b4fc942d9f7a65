"""The sessions aioseq makes for itself share one botocore loader (no server)."""

from __future__ import annotations

from aioseq import _client


def test_sessions_aioseq_makes_share_the_service_model_loader() -> None:
    first, second = _client._new_session(), _client._new_session()
    assert first is not second  # credentials and region are read anew for each store
    loader = first._session.get_component("data_loader")
    assert loader is second._session.get_component("data_loader")
    # The cache is what is shared: DynamoDB's model is parsed once per process.
    model = loader.load_service_model("dynamodb", "service-2")
    assert (
        second._session.get_component("data_loader").load_service_model("dynamodb", "service-2")
        is model
    )
