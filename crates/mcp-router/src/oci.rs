//! An OCI image `add` runs by digest: the tag the `server.json` gives is resolved once, at add
//! time, to the digest its registry serves for it (the distribution API's manifest, anonymous
//! bearer token when the registry asks for one), and the entry runs `docker run … image@digest`,
//! so what runs later is that image or nothing: docker checks the content against the digest.

use anyhow::{Context as _, bail};

/// The manifests a registry may answer with, most specific last.
const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// An image reference: the registry's base URL, the repository and the tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Image {
    /// `https://host` (`http://` for a loopback test registry).
    pub(crate) base: String,
    /// The host as `docker run` names it (`docker.io` for Docker Hub).
    pub(crate) host: String,
    pub(crate) repository: String,
    pub(crate) tag: String,
}

impl Image {
    /// The image `identifier` at `version`, on `registry_base` (the `server.json`'s
    /// `registryBaseUrl`) unless the identifier names its registry.
    pub(crate) fn parse(identifier: &str, version: &str, registry_base: Option<&str>) -> Self {
        let (name, tag) = match identifier.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => (name, tag.to_string()),
            _ => (identifier, version.to_string()),
        };
        let first = name.split('/').next().unwrap_or_default();
        let named_host = name.contains('/') && (first.contains('.') || first.contains(':'));
        let (host, repository) = match named_host {
            true => (first.to_string(), name[first.len() + 1..].to_string()),
            false => {
                let base = registry_base.unwrap_or("https://docker.io");
                let host = base.split("://").nth(1).unwrap_or(base).trim_end_matches('/');
                (host.to_string(), name.to_string())
            }
        };
        let docker_hub =
            matches!(host.as_str(), "docker.io" | "index.docker.io" | "registry-1.docker.io");
        let repository = match docker_hub && !repository.contains('/') {
            true => format!("library/{repository}"),
            false => repository,
        };
        let base = match (docker_hub, registry_base) {
            (true, _) => "https://registry-1.docker.io".to_string(),
            (false, Some(b)) if b.contains(&host) => b.trim_end_matches('/').to_string(),
            (false, _) => format!("https://{host}"),
        };
        let host = if docker_hub { "docker.io".to_string() } else { host };
        Self { base, host, repository, tag }
    }

    /// The digest the registry serves for the tag now.
    pub(crate) async fn resolve(&self) -> anyhow::Result<String> {
        let client = reqwest::Client::new();
        let url = format!("{}/v2/{}/manifests/{}", self.base, self.repository, self.tag);
        let ask = |token: Option<&str>| {
            let mut request = client.get(&url).header("accept", ACCEPT);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send()
        };
        let mut response = ask(None).await.with_context(|| format!("asking {url}"))?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            let challenge =
                response.headers().get("www-authenticate").and_then(|v| v.to_str().ok());
            let token = token(&client, challenge.unwrap_or_default()).await?;
            response = ask(Some(&token)).await.with_context(|| format!("asking {url}"))?;
        }
        if !response.status().is_success() {
            bail!("the registry answered {} for {url}: no such image tag", response.status());
        }
        let header = response.headers().get("docker-content-digest").and_then(|v| v.to_str().ok());
        let header = header.map(str::to_string);
        let body = response.bytes().await.context("reading the manifest")?;
        let computed = crate::packages::sha256_hex(&body);
        let computed = format!("sha256:{computed}");
        match header {
            Some(header) if header != computed => bail!(
                "the registry's digest for {} ({header}) is not its manifest's ({computed}): refused",
                self.reference()
            ),
            _ => Ok(computed),
        }
    }

    /// `host/repository:tag`.
    pub(crate) fn reference(&self) -> String {
        format!("{}/{}:{}", self.host, self.repository, self.tag)
    }

    /// `host/repository@digest`, what `docker run` is given.
    pub(crate) fn pinned(&self, digest: &str) -> String {
        format!("{}/{}@{digest}", self.host, self.repository)
    }
}

/// An anonymous pull token from the `Bearer realm=…,service=…,scope=…` challenge.
async fn token(client: &reqwest::Client, challenge: &str) -> anyhow::Result<String> {
    let params = challenge
        .strip_prefix("Bearer ")
        .context("the registry asks for a sign-in this router cannot give")?;
    let field = |name: &str| {
        params.split(',').find_map(|p| {
            let (key, value) = p.trim().split_once('=')?;
            (key == name).then(|| value.trim_matches('"').to_string())
        })
    };
    let realm = field("realm").context("the registry's challenge names no realm")?;
    let query: Vec<String> = ["service", "scope"]
        .iter()
        .filter_map(|name| Some(format!("{name}={}", crate::packages::encode(&field(name)?))))
        .collect();
    let sep = if realm.contains('?') { '&' } else { '?' };
    let url = format!("{realm}{sep}{}", query.join("&"));
    let answer: serde_json::Value = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("asking {realm} for a token"))?
        .json()
        .await
        .context("the token answer is not JSON")?;
    let token = answer["token"].as_str().or(answer["access_token"].as_str());
    token.map(str::to_string).context("the token answer has no token")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_their_registry_repository_and_tag() {
        let hub = Image::parse("ada/greeter", "1.0.0", Some("https://docker.io"));
        assert_eq!(hub.base, "https://registry-1.docker.io");
        assert_eq!(hub.pinned("sha256:ab"), "docker.io/ada/greeter@sha256:ab");
        let official = Image::parse("redis", "7", None);
        assert_eq!(official.repository, "library/redis");
        let ghcr = Image::parse("ghcr.io/ada/greeter:2.0.0", "1.0.0", None);
        assert_eq!((ghcr.base.as_str(), ghcr.tag.as_str()), ("https://ghcr.io", "2.0.0"));
        assert_eq!(ghcr.reference(), "ghcr.io/ada/greeter:2.0.0");
        let local = Image::parse("ada/greeter", "1.0.0", Some("http://127.0.0.1:5000"));
        assert_eq!(local.base, "http://127.0.0.1:5000");
        assert_eq!(local.pinned("sha256:ab"), "127.0.0.1:5000/ada/greeter@sha256:ab");
    }
}
