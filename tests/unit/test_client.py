"""The sessions aioseq makes for itself share one botocore loader; a bad profile is a typed
error (no server: nothing is sent)."""

from __future__ import annotations

import pytest

from aioseq import ConfigurationError, DynamoStore, _client


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


@pytest.mark.parametrize("region", [None, "eu-west-1"])
async def test_a_profile_that_does_not_exist_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, region: str | None
) -> None:
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(ConfigurationError, match=r"\(no-such-profile\).*AWS_PROFILE"):
        await DynamoStore.open(endpoint_url="http://127.0.0.1:9", region_name=region)
