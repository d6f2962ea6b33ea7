"""The vendor token table for redact.py: one named family per prefix-marked credential.

Each row is `(kind, description, regex)`. The regexes carry their own right-hand boundary where
the token has a fixed length, so a longer look-alike is not half-matched; redact_tokens.py
adds the left-hand boundary (no letter, digit, `_` or `-` right before, relaxed for the rows
with a distinctive prefix) and joins the table into one alternation, so the whole table costs
one scan of the text however many rows it has.

Every shape comes from the vendor's published token format. The values they match are random
strings with a marker no ordinary word carries (`ghp_`, `xoxb-`, `AKIA`, `hvs.`), which is what
lets them be recognised without a key name in front.
"""

from __future__ import annotations

# Right-hand boundary for fixed-length tokens: no further token character.
_END = r"(?![A-Za-z0-9_-])"

TOKENS: tuple[tuple[str, str, str], ...] = (
    ("anthropic_key", "Anthropic API key (sk-ant-...)", r"sk-ant-[A-Za-z0-9_-]{20,}"),
    (
        "openai_key",
        "OpenAI API key (sk-..., sk-proj-..., sk-svcacct-..., sk-admin-...)",
        # A digit or capital somewhere keeps hyphenated prose such as "sk-some-long-word" out.
        r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*[0-9A-Z])[A-Za-z0-9_-]{20,}",
    ),
    (
        "github_token",
        "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
        r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
    ),
    (
        "gitlab_token",
        "GitLab token (glpat-, glrt-, gldt-, glptt-, glcbt-, glft-, glimt-, glsoat-, gloas-) "
        "and runner registration token (GR1348941...)",
        r"(?:gl(?:pat|rt|dt|ptt|cbt|ft|imt|soat|oas|agent)-[A-Za-z0-9_-]{20,}"
        r"|GR1348941[A-Za-z0-9_-]{20,})",
    ),
    (
        "slack_token",
        "Slack token (xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-, xoxe-, xapp-)",
        r"(?:xox[abposre](?:\.[A-Za-z0-9]+)?-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})",
    ),
    (
        "stripe_key",
        "Stripe secret, restricted or webhook-signing key (sk_live_, rk_test_, whsec_, ...)",
        r"(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
    ),
    ("google_api_key", "Google API key (AIza...)", r"AIza[A-Za-z0-9_-]{35,}"),
    (
        "google_oauth",
        "Google OAuth client secret (GOCSPX-), access token (ya29.) or refresh token (1//0...)",
        r"(?:GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[A-Za-z0-9_-]{30,}|1//0[A-Za-z0-9_-]{30,})",
    ),
    ("npm_token", "npm access token (npm_...)", r"npm_[A-Za-z0-9]{36,}"),
    (
        "minionsd_token",
        "minionsd gateway token (mnt_ + 43 URL-safe characters)",
        r"mnt_[A-Za-z0-9_-]{43}" + _END,
    ),
    (
        "pypi_token",
        "PyPI or TestPyPI API token (pypi-AgE...), with or without a key name in front",
        r"pypi-Ag[A-Za-z0-9_-]{40,}",
    ),
    (
        "docker_token",
        "Docker Hub personal or organisation access token (dckr_pat_, dckr_oat_)",
        r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}",
    ),
    ("nuget_key", "NuGet API key (oy2 + 43 characters)", r"oy2[a-z0-9]{43}" + _END),
    (
        "aws_access_key_id",
        "AWS access key id (AKIA, ASIA and the other four-letter prefixes + 16 characters)",
        r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|AROA|ANPA|ANVA|APKA)[A-Z0-9]{16}" + _END,
    ),
    (
        "azure_client_secret",
        "Microsoft Entra (Azure AD) client secret (three characters, a digit, Q~, 31-34 more)",
        r"[A-Za-z0-9_.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}" + _END,
    ),
    ("twilio_key", "Twilio API key (SK + 32 hex)", r"SK[0-9a-fA-F]{32}" + _END),
    (
        "sendgrid_key",
        "SendGrid API key (SG.id.secret)",
        r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}",
    ),
    (
        "shopify_token",
        "Shopify access token, shared secret, custom or private app token "
        "(shpat_, shpss_, shpca_, shppa_)",
        r"shp(?:at|ss|ca|pa)_[A-Za-z0-9]{20,}",
    ),
    (
        "vault_token",
        "HashiCorp Vault service, batch or recovery token (hvs., hvb., hvr.)",
        r"hv[sbr]\.[A-Za-z0-9_-]{24,}",
    ),
    (
        "terraform_token",
        "HCP Terraform / Terraform Cloud API token (14 characters, .atlasv1., the rest)",
        r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,}",
    ),
    ("age_secret_key", "age encryption secret key (AGE-SECRET-KEY-1...)",
     r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    (
        "telegram_bot_token",
        "Telegram bot token (bot id, a colon, 35 characters; current tokens start AA)",
        r"[0-9]{8,10}:(?:AA[A-Za-z0-9_-]{30,40}|[A-Za-z0-9_-]{35})" + _END,
    ),
    (
        "discord_bot_token",
        "Discord bot token (three dot-separated base64url parts, the first starting M, N or O)",
        r"[MNO][A-Za-z0-9]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}" + _END,
    ),
    (
        "atlassian_token",
        "Atlassian API token or Bitbucket app password / access token (ATATT, ATBB, ATCTT)",
        r"(?:ATATT|ATCTT|ATBB)[A-Za-z0-9_=+-]{24,}",
    ),
    (
        "digitalocean_token",
        "DigitalOcean personal, OAuth or refresh token (dop_v1_, doo_v1_, dor_v1_)",
        r"do[opr]_v1_[a-f0-9]{64}" + _END,
    ),
    (
        "huggingface_token",
        "Hugging Face access token (hf_ + 30-40 letters and digits)",
        r"hf_(?=[A-Za-z]*[0-9A-Z])[A-Za-z0-9]{30,40}" + _END,
    ),
    ("databricks_token", "Databricks personal access token (dapi + 32 hex)",
     r"dapi[a-f0-9]{32}(?:-[0-9])?" + _END),
    ("grafana_token", "Grafana service-account or Cloud token (glsa_, glc_)",
     r"(?:glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}|glc_[A-Za-z0-9+/=_-]{32,})"),
    ("sentry_token", "Sentry auth token (sntrys_, sntryu_)", r"sntry[su]_[A-Za-z0-9_=+/-]{30,}"),
    ("newrelic_key", "New Relic user or ingest key (NRAK-, NRII-)",
     r"NR(?:AK|II)-[A-Z0-9]{27}" + _END),
    ("postman_key", "Postman API key (PMAK-...)", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _END),
    ("linear_key", "Linear API key (lin_api_...)", r"lin_api_[A-Za-z0-9]{40}" + _END),
    ("notion_token", "Notion integration token (secret_ + 43, ntn_ + 46)",
     r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,50})" + _END),
    ("mailgun_key", "Mailgun API key (key- + 32 hex)", r"key-[0-9a-f]{32}" + _END),
    ("mailchimp_key", "Mailchimp API key (32 hex + -usN)", r"[0-9a-f]{32}-us[0-9]{1,2}" + _END),
    ("square_token", "Square access token or application secret (sq0atp-, sq0csp-, EAAA...)",
     r"(?:sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|EAAA[A-Za-z0-9_-]{60,})"),
    ("supabase_token", "Supabase personal access token (sbp_ + 40 hex)",
     r"sbp_[a-f0-9]{40}" + _END),
    ("planetscale_token", "PlanetScale password or token (pscale_pw_, pscale_tkn_)",
     r"pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_.-]{32,}"),
    ("doppler_token", "Doppler token (dp.st., dp.pt., dp.sa., dp.ct.)",
     r"dp\.(?:st|pt|sa|ct|scim|audit)\.[A-Za-z0-9_.-]{40,}"),
    ("pulumi_token", "Pulumi access token (pul- + 40 hex)", r"pul-[a-f0-9]{40}" + _END),
    ("crates_token", "crates.io API token (cio + 32)", r"cio[A-Za-z0-9]{32}" + _END),
    ("rubygems_key", "RubyGems API key (rubygems_ + 48 hex)", r"rubygems_[a-f0-9]{48}" + _END),
    ("dynatrace_token", "Dynatrace API token (dt0c01. + 24 + . + 64)",
     r"dt0[a-z][0-9]{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64}" + _END),
    ("heroku_key", "Heroku API key in the prefixed format (HRKU-...)", r"HRKU-[A-Za-z0-9_-]{40,}"),
    ("netlify_token", "Netlify personal access token (nfp_ + 36)", r"nfp_[A-Za-z0-9]{36,}"),
    ("flyio_token", "Fly.io token (fm1_/fm2_/fo1_ + 40 or more)",
     r"(?:fm[12][ar]?|fo1)_[A-Za-z0-9+/=_-]{40,}"),
    ("render_key", "Render API key (rnd_ + 32)", r"rnd_[A-Za-z0-9]{32,}"),
    ("airtable_token", "Airtable personal access token (pat + 14 + . + 64 hex)",
     r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}" + _END),
    ("contentful_token", "Contentful personal access token (CFPAT- + 43)",
     r"CFPAT-[A-Za-z0-9_-]{43,}"),
    ("sonar_token", "SonarQube / SonarCloud token (sqp_, squ_, sqa_ + 40 hex)",
     r"sq[pua]_[a-f0-9]{40}" + _END),
    ("buildkite_token", "Buildkite API token (bkua_ + 40)", r"bkua_[A-Za-z0-9]{40}" + _END),
    ("circleci_token", "CircleCI personal API token (CCIPAT_...)",
     r"CCIPAT_[A-Za-z0-9]{20,}_[a-f0-9]{40}" + _END),
    ("jfrog_token", "JFrog Artifactory API key or reference token (AKCp..., cmVmdGtu...)",
     r"(?:AKCp[A-Za-z0-9]{60,}|cmVmdGtu[A-Za-z0-9]{56,})"),
    ("mapbox_secret_token", "Mapbox secret token (sk.eyJ...)",
     r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"),
    ("groq_key", "Groq API key (gsk_ + 52)", r"gsk_[A-Za-z0-9]{48,}"),
    ("xai_key", "xAI API key (xai- + 70 or more)", r"xai-[A-Za-z0-9]{70,}"),
    ("brevo_key", "Brevo (Sendinblue) API key (xkeysib- + 64 hex + - + 16)",
     r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}" + _END),
    ("figma_token", "Figma personal access token (figd_ + 40 or more)", r"figd_[A-Za-z0-9_-]{38,}"),
    ("tailscale_key", "Tailscale auth or API key (tskey-auth-, tskey-api-, tskey-client-, ...)",
     r"tskey-[a-z]{3,10}-[A-Za-z0-9]{6,20}-[A-Za-z0-9]{20,}"),
)
