"""Look-alikes of the fence tag's characters, for minionsd/fence.py (data only).

GENERATED, do not edit by hand. Source: Unicode confusables.txt (UTS #39 security data),
Version 17.0.0, dated 2025-07-22, 05:49:37 GMT, sha256 ec88ecebcf89f63f...; Python unicodedata
14.0.0. Regenerate with
    python scripts/gen_confusables.py confusables.txt > minionsd/confusables.py
(the script's docstring says what is kept and which groups are joined on purpose).

READER maps a character, in its NFKD form without marks, to the ASCII character of the
fence tag a reader takes it for: `<`, `>`, `/` (slashes and backslashes), `-`, or a
lower-case letter of UNTRUSTED INPUT. OPEN and CLOSE hold every code point whose NFKD
form starts with a character that reads as `<` or `>`.
"""

_READS_AS_DASH = (
    "\u002e\u005f\u02d7\u06d4\u1173\u2010\u2012\u2013\u2014\u2015\u2043\u2212\u2500\u2501"
    "\u2796\u2cba\u2cbb\u30fc\u31d0\u4e00\ua7f7"
)
_READS_AS_SLASH = (
    "\u005c\u1735\u2041\u2044\u2215\u2216\u244a\u2571\u27cb\u27cd\u29f5\u29f8\u29f9\u2afb"
    "\u2afd\u2cc6\u2cc7\u2cf9\u3033\u30ce\u31d3\u31d4\u4e36\u4e3f\U0001d20f\U0001d23a"
    "\U0001d23b"
)
_READS_AS_LT = (
    "\u02c2\u1438\u16b2\u2039\u226a\u226e\u22d6\u22d8\u276c\u276e\u2770\u27e8\u27ea\u29d8"
    "\u29fc\u3008\u304f\u31db\U0001d236\U00021fe8"
)
_READS_AS_GT = (
    "\u02c3\u1433\u203a\u226b\u226f\u22d7\u22d9\u276d\u276f\u2771\u27e9\u27eb\u29d9\u29fd"
    "\u2a20\u3009\U00016f3f\U0001d237"
)
_READS_AS_D = (
    "\u0110\u0111\u018a\u018b\u018c\u0221\u0256\u0257\u0501\u13a0\u13e7\u146f\u15de\u15ea"
    "\u1d05\u1d6d\u1d81\u1d91\ua4d2\ua4d3\ua7c7\ua7c8\U0001ccd9\U0001f153\U0001f173"
    "\U0001f1e9"
)
_READS_AS_E = (
    "\u0246\u0247\u025b\u0395\u03b5\u0415\u0435\u0454\u04bd\u0511\u13ac\u1d07\u1d92\u212e"
    "\u22f4\u22ff\u2c78\u2c89\u2d39\ua4f0\ua793\uab32\uab34\uab9b\U00010286\U00010429"
    "\U000118a6\U000118ae\U000118ce\U0001ccda\U0001f154\U0001f174\U0001f1ea"
)
_READS_AS_I = (
    "1l\u007c\u0131\u0196\u0197\u01c0\u0268\u0269\u026a\u0399\u03b9\u0406\u0456\u04c0"
    "\u04cf\u0582\u05c0\u05d5\u05df\u0627\u0661\u06f1\u07ca\u13a5\u16c1\u1d96\u2223\u2373"
    "\u23fd\u2502\u2c92\u2c93\u2d4f\ua4f2\ua646\ua647\uab75\U0001028a\U00010309\U00010320"
    "\U000118c3\U00011dda\U00011de1\U00016eaa\U00016f28\U0001ccde\U0001ccf1\U0001df1a"
    "\U0001e8c7\U0001f158\U0001f178\U0001f1ee"
)
_READS_AS_N = (
    "\u019d\u019e\u0220\u0235\u0272\u0273\u0274\u039d\u0578\u057c\u1d70\u1d87\u2c9a\ua4e0"
    "\ua790\ua791\ua7a4\ua7a5\uab3b\U00010513\U0001cce3\U0001f15d\U0001f17d\U0001f1f3"
)
_READS_AS_P = (
    "\u00fe\u01a4\u01a5\u01bf\u03a1\u03c1\u03f8\u0420\u0440\u13e2\u146d\u1d18\u1d71\u1d7d"
    "\u1d88\u2374\u2c63\u2ca2\u2ca3\u2cce\u2ccf\ua4d1\ua750\ua751\ua752\ua753\ua754\ua755"
    "\U00010295\U0001cce5\U0001f15f\U0001f17f\U0001f1f5"
)
_READS_AS_R = (
    "\u01a6\u024c\u024d\u027c\u027d\u027e\u0280\u0433\u13a1\u13d2\u1587\u1d26\u1d72\u1d73"
    "\u1d89\u2c64\u2c85\ua4e3\ua7a6\ua7a7\uab47\uab48\uab49\uab81\U000104b4\U00016f35"
    "\U0001cce7\U0001d216\U0001df16\U0001f161\U0001f181\U0001f1f7"
)
_READS_AS_S = (
    "\u01bd\u023f\u0282\u0405\u0455\u054f\u0d1f\u13d5\u13da\u1d74\u1d8a\u2c7e\ua4e2\ua731"
    "\ua7a8\ua7a9\ua7c5\ua7c9\ua7ca\uabaa\U00010296\U00010420\U00010448\U000118c1"
    "\U00016f3a\U0001cce8\U0001df1e\U0001f162\U0001f182\U0001f1f8"
)
_READS_AS_T = (
    "\u0166\u0167\u01ab\u01ac\u01ad\u01ae\u0236\u023e\u0288\u03a4\u03c4\u0422\u0442\u13a2"
    "\u1d1b\u1d75\u22a4\u27d9\u2c66\u2ca6\u2ca7\ua4d4\uab72\U00010297\U000102b1\U00010315"
    "\U000118bc\U00016f0a\U0001cce9\U0001df09\U0001f163\U0001f183\U0001f1f9\U0001f768"
)
_READS_AS_U = (
    "\u0244\u0289\u028b\u03c5\u054d\u057d\u1200\u144c\u1d1c\u1d99\u222a\u22c3\ua4f4\ua79f"
    "\ua7b8\ua7b9\uab4e\uab52\U000104ce\U000104f6\U000118b8\U000118d8\U00016f42\U0001ccea"
    "\U0001f164\U0001f184\U0001f1fa"
)
READER: dict[str, str] = {
    **dict.fromkeys(_READS_AS_DASH, '-'),
    **dict.fromkeys(_READS_AS_SLASH, '/'),
    **dict.fromkeys(_READS_AS_LT, '<'),
    **dict.fromkeys(_READS_AS_GT, '>'),
    **dict.fromkeys(_READS_AS_D, 'd'),
    **dict.fromkeys(_READS_AS_E, 'e'),
    **dict.fromkeys(_READS_AS_I, 'i'),
    **dict.fromkeys(_READS_AS_N, 'n'),
    **dict.fromkeys(_READS_AS_P, 'p'),
    **dict.fromkeys(_READS_AS_R, 'r'),
    **dict.fromkeys(_READS_AS_S, 's'),
    **dict.fromkeys(_READS_AS_T, 't'),
    **dict.fromkeys(_READS_AS_U, 'u'),
}
OPEN = (
    "\u003c\u02c2\u1438\u16b2\u2039\u226a\u226e\u22d6\u22d8\u2329\u276c\u276e\u2770\u27e8"
    "\u27ea\u29d8\u29fc\u3008\u304f\u3050\u31db\ufe3f\ufe64\uff1c\U0001d236\U00021fe8"
)
CLOSE = (
    "\u003e\u02c3\u1433\u203a\u226b\u226f\u22d7\u22d9\u232a\u276d\u276f\u2771\u27e9\u27eb"
    "\u29d9\u29fd\u2a20\u3009\ufe40\ufe65\uff1e\U00016f3f\U0001d237"
)
