"""The fake cluster double's SCRAM and quota APIs at the wire level, for what the admin client
never sends: two alterations of one user in a request (KRaft: DUPLICATE_RESOURCE), a user asked
twice, raw filters, and zk mode's NOT_CONTROLLER on a non-controller."""

from __future__ import annotations


def upsertion(name, mechanism=1, iterations=4096):
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": b"s" * 16, "salted_password": b"p" * 32}


async def test_two_alterations_of_one_user_in_a_request_fail_that_user_only(client, cluster):
    response = await client.call(51, 0, {"deletions": [], "upsertions": [upsertion("a", 1), upsertion("a", 2), upsertion("b")]})
    errors = {r.user: (r.error_code.name, r.error_message) for r in response.results}
    assert errors["a"][0] == "duplicate_resource" and "altered twice" in errors["a"][1]
    assert errors["b"][0] == "none"
    assert set(cluster.state.principals.scram) == {"b"}


async def test_describe_asks_twice_for_a_user_and_for_a_missing_one(client, cluster):
    await client.call(51, 0, {"deletions": [], "upsertions": [upsertion("a", 2, 8192)]})
    response = await client.call(50, 0, {"users": [{"name": "a"}, {"name": "a"}, {"name": "zed"}]})
    by_user = {r.user: r for r in response.results}
    assert by_user["a"].error_code.name == "duplicate_resource"
    assert by_user["zed"].error_code.name == "resource_not_found"
    every = await client.call(50, 0, {"users": None})
    assert [(r.user, [(c.mechanism, c.iterations) for c in r.credential_infos]) for r in every.results] == [("a", [(2, 8192)])]


async def test_quota_filters_follow_kip_546(client):
    entries = [
        ([("user", "u1")], "producer_byte_rate"),
        ([("user", "u1"), ("client-id", "c1")], "producer_byte_rate"),
        ([("user", None), ("client-id", "c1")], "consumer_byte_rate"),
        ([("client-id", None)], "request_percentage"),
    ]
    alter = {
        "entries": [
            {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity], "ops": [{"key": key, "value": 10.0, "remove": False}]}
            for entity, key in entries
        ],
        "validate_only": False,
    }
    answered = await client.call(49, 1, alter)
    assert [e.error_code.name for e in answered.entries] == ["none"] * 4

    async def describe(components, strict=False):
        response = await client.call(48, 1, {"components": components, "strict": strict})
        assert response.error_code.name == "none", response.error_message
        found = [tuple((e.entity_type, e.entity_name) for e in entry.entity) for entry in response.entries]
        return sorted(found, key=repr)

    def comp(entity_type, match_type, match=None):
        return {"entity_type": entity_type, "match_type": match_type, "match": match}

    assert len(await describe([])) == 4
    assert await describe([comp("client-id", 0, "c1")]) == sorted(
        [(("user", None), ("client-id", "c1")), (("user", "u1"), ("client-id", "c1"))], key=repr
    )
    assert await describe([comp("client-id", 0, "c1"), comp("user", 1)]) == [(("user", None), ("client-id", "c1"))]
    assert await describe([comp("user", 2)], strict=True) == [(("user", "u1"),)]
    assert await describe([comp("client-id", 1)], strict=True) == [(("client-id", None),)]
    bad = await client.call(48, 1, {"components": [comp("user", 0, None)], "strict": False})
    assert bad.error_code.name == "invalid_request" and "MATCH_TYPE_EXACT" in bad.error_message


async def test_zk_writes_need_the_controller(zk_client, zk_cluster):
    other = next(b for b in zk_cluster.brokers if b != zk_cluster.controller_id)
    scram = await zk_client.call(51, 0, {"deletions": [], "upsertions": [upsertion("a")]}, broker=other)
    assert scram.results[0].error_code.name == "not_controller"
    quotas = await zk_client.call(
        49, 0,
        {"entries": [{"entity": [{"entity_type": "user", "entity_name": "a"}], "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}]}],
         "validate_only": False},
        broker=other,
    )
    assert quotas.entries[0].error_code.name == "not_controller"
    assert zk_cluster.state.principals.scram == {} and zk_cluster.state.principals.quotas == {}
