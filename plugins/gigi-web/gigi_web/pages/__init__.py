"""Every page's route, in one table: sign-in, the server list and each server's pages."""

from __future__ import annotations

from starlette.routing import Route

from gigi_web.pages import (
    audit,
    auth,
    budgets,
    channels,
    config,
    grants,
    jobs,
    knowledge,
    llm,
    memory,
    memory_admin,
    mydata,
    plugins,
    runs,
    servers,
    usage,
    usage_members,
)


def routes() -> list[Route]:
    g = "/g/{guild_id:int}"
    return [
        Route("/", auth.home),
        Route("/signin", auth.signin),
        Route("/auth/callback", auth.callback),
        Route("/signout", auth.signout, methods=["POST"]),
        Route("/servers", servers.server_list),
        Route(g, servers.guild_home),
        Route(f"{g}/plugins", plugins.plugin_list),
        Route(f"{g}/plugins/{{plugin}}/enable", plugins.enable, methods=["GET", "POST"]),
        Route(f"{g}/plugins/{{plugin}}/disable", plugins.disable, methods=["POST"]),
        Route(f"{g}/plugins/{{plugin}}/config", config.config_page, methods=["GET", "POST"]),
        Route(f"{g}/grants", grants.grant_list),
        Route(f"{g}/grants/add", grants.add, methods=["POST"]),
        Route(f"{g}/grants/remove", grants.remove, methods=["POST"]),
        Route(f"{g}/channels", channels.channel_list),
        Route(f"{g}/channels/set", channels.set_state, methods=["POST"]),
        Route(f"{g}/memory", memory.memory_page),
        Route(f"{g}/memory/set", memory.set_channel, methods=["POST"]),
        Route(f"{g}/memory/policy", memory_admin.set_policy, methods=["POST"]),
        Route(f"{g}/memory/purge", memory_admin.purge_page),
        Route(f"{g}/memory/purge", memory_admin.purge, methods=["POST"]),
        Route(f"{g}/knowledge", knowledge.knowledge_page),
        Route(f"{g}/knowledge/set", knowledge.set_extraction, methods=["POST"]),
        Route(f"{g}/llm", llm.llm_page),
        Route(f"{g}/llm/credentials/add", llm.add_credential, methods=["POST"]),
        Route(f"{g}/llm/credentials/revoke", llm.revoke_credential, methods=["POST"]),
        Route(f"{g}/llm/profiles/set", llm.set_profile, methods=["POST"]),
        Route(f"{g}/llm/profiles/remove", llm.remove_profile, methods=["POST"]),
        Route(f"{g}/budgets", budgets.budget_page),
        Route(f"{g}/budgets/set", budgets.set_budget, methods=["POST"]),
        Route(f"{g}/budgets/reset", budgets.reset_budget, methods=["POST"]),
        Route(f"{g}/budgets/remove", budgets.remove_budget, methods=["POST"]),
        Route(f"{g}/budgets/personal-keys", budgets.set_personal_keys, methods=["POST"]),
        Route(f"{g}/runs", runs.run_list),
        Route(f"{g}/runs/{{run_id}}", runs.run_trace),
        Route(f"{g}/jobs", jobs.job_list),
        Route(f"{g}/jobs/cancel", jobs.cancel, methods=["POST"]),
        Route(f"{g}/jobs/retry", jobs.retry, methods=["POST"]),
        Route(f"{g}/audit", audit.audit_page),
        Route(f"{g}/usage", usage.usage_page),
        Route(f"{g}/usage/members", usage_members.usage_members),
        Route(f"{g}/data", mydata.data_page),
        Route(f"{g}/data/export", mydata.export),
        Route(f"{g}/data/delete", mydata.delete, methods=["GET", "POST"]),
    ]
