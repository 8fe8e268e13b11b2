// One import for a verifier app (after jwt-kit's Exports.swift): `import HealthCardsVerify` brings the Core types
// its API takes and gives (JWS, JWKS, Finding, RuleCode, HealthCardError, JSONValue, …).
@_exported import HealthCardsCore
