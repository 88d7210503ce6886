"""callgate inside the frameworks people use: a LiteLLM guardrail and a pydantic-ai model.

:mod:`callgate.integrations.litellm` holds :class:`CallgateGuardrail` (``pip install
'callgate[litellm]'``); :mod:`callgate.integrations.pydantic_ai` holds
:class:`CallgateModel` (``pip install 'callgate[pydantic-ai]'``). Both play the
framework's stream through the proxy's engine (:mod:`callgate.proxy.engine`), so they
decide as ``callgate check``, the loops and the proxy do. This package imports neither
framework: each module imports its own, when it is imported.
"""
